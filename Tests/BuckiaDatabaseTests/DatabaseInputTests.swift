import BuckiaCore
@testable import BuckiaDatabase
import BuckiaSQLite
import Foundation
import Testing

/// What a database operation is handed that is not a database it may use: refused before SQLite
/// opens it, and the live database left byte for byte as it was (issue 47, items 1–3).
@Suite("Database inputs: special files, empty files and self-copies are refused, and nothing changes")
struct DatabaseInputTests {
    /// A bad backup, made in `folder` beside the live database `app.db`.
    struct BadBackup: Sendable, CustomTestStringConvertible {
        let name: String
        /// The error code the refusal carries.
        let code: BuckiaError.Code
        /// Makes the file (or names one) and returns its path.
        let make: @Sendable (URL) throws -> URL
        var testDescription: String { name }
    }

    static let badBackups: [BadBackup] = [
        BadBackup(name: "an empty file", code: .corrupt) { folder in
            let url = folder.appendingPathComponent("empty")
            try Data().write(to: url)
            return url
        },
        BadBackup(name: "a database with no tables", code: .corrupt) { folder in
            let url = folder.appendingPathComponent("none.db")
            try SQLiteConnection(path: url.path).execute("CREATE TABLE x (a); DROP TABLE x")
            return url
        },
        BadBackup(name: "a text file", code: .corrupt) { folder in
            let url = folder.appendingPathComponent("notes.txt")
            try Data(String(repeating: "not a database\n", count: 40).utf8).write(to: url)
            return url
        },
        BadBackup(name: "/dev/zero", code: .invalidPath) { _ in URL(fileURLWithPath: "/dev/zero") },
        BadBackup(name: "a FIFO", code: .invalidPath) { folder in
            let url = folder.appendingPathComponent("fifo")
            guard mkfifo(url.path, 0o600) == 0 else { throw BuckiaError.posix(errno, operation: "mkfifo", path: url.path) }
            return url
        },
        BadBackup(name: "a folder", code: .invalidPath) { folder in folder },
        BadBackup(name: "the database itself", code: .invalidPath) { folder in folder.appendingPathComponent("app.db") },
        BadBackup(name: "a link to the database", code: .invalidPath) { folder in
            let url = folder.appendingPathComponent("link.db")
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "app.db")
            return url
        },
    ]

    /// `app.db` in a new folder, with rows.
    static func live() throws -> (folder: URL, database: URL) {
        let folder = try DB.scratch("input")
        let database = folder.appendingPathComponent("app.db")
        try DB.make(database, "INSERT INTO recordings (id, title) VALUES (1, 'one'), (2, 'two')")
        return (folder, database)
    }

    @Test("A restore refuses what is not a valid, non-empty database, and the live one stays byte-identical", arguments: badBackups)
    func restoreRefuses(_ bad: BadBackup) throws {
        let (folder, database) = try Self.live()
        defer { try? FileManager.default.removeItem(at: folder) }
        let before = try DB.bytes(database)
        let backup = try bad.make(folder)
        let error = try #require(throws: BuckiaError.self) { try DatabaseBackup.restore(from: backup, to: database) }
        #expect(error.code == bad.code, "\(error)")
        #expect(try DB.bytes(database) == before)
    }

    @Test("A backup refuses a source that is no database or is its destination, and keeps a file that is not a backup")
    func backupRefuses() throws {
        let (folder, database) = try Self.live()
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("out.sqlite")
        // (A database with no tables, or a link to one, is a database to back up.)
        for bad in Self.badBackups where !["a database with no tables", "a link to the database"].contains(bad.name) {
            let source = try bad.make(folder)
            #expect(throws: BuckiaError.self, "\(bad.name) as the source") {
                try DatabaseBackup.write(from: source, to: source.path == database.path ? database : out, method: .onlineBackup)
            }
            #expect(!FileManager.default.fileExists(atPath: out.path), "a backup of \(bad.name) was written")
        }
        try FileManager.default.linkItem(at: database, to: folder.appendingPathComponent("hard.db"))
        let hard = try #require(throws: BuckiaError.self) { try DatabaseBackup.write(from: database, to: folder.appendingPathComponent("hard.db"), method: .vacuumInto) }
        #expect(hard.code == .invalidPath)
        let notes = folder.appendingPathComponent("my-notes.txt")
        try Data("my notes, not a backup\n".utf8).write(to: notes)
        let kept = try #require(throws: BuckiaError.self) { try DatabaseBackup.write(from: database, to: notes, method: .onlineBackup) }
        #expect(kept.code == .corrupt)
        #expect(try String(contentsOf: notes, encoding: .utf8) == "my notes, not a backup\n")
        // And a good backup still goes through.
        #expect(try DatabaseBackup.write(from: database, to: out, method: .onlineBackup).size > 0)
    }

    @Test("The status of a device or FIFO is refused without opening it", arguments: ["/dev/null", "fifo"])
    func statusRefusesSpecialFiles(_ name: String) throws {
        let folder = try DB.scratch("status")
        defer { try? FileManager.default.removeItem(at: folder) }
        var url = URL(fileURLWithPath: name)
        if name == "fifo" {
            url = folder.appendingPathComponent("fifo")
            #expect(mkfifo(url.path, 0o600) == 0)
        }
        let error = try #require(throws: BuckiaError.self) { try DatabaseStatus(database: url) }
        #expect(error.code == .invalidPath)
    }

    /// `old.db` and `new.db` with one plain table; `sql` runs on both, then `newSQL` on the new one.
    static func pair(_ sql: String, new newSQL: String) throws -> (folder: URL, old: URL, new: URL) {
        let folder = try DB.scratch("uncarried")
        let old = folder.appendingPathComponent("old.db"), new = folder.appendingPathComponent("new.db")
        for url in [old, new] { try DB.make(url, "INSERT INTO recordings (id, title) VALUES (1, 'one'); " + sql) }
        try SQLiteConnection(path: new.path).execute(newSQL)
        return (folder, old, new)
    }

    @Test(
        "A diff refuses, by name, a table it cannot carry whose rows changed",
        arguments: [
            ("CREATE VIRTUAL TABLE notes USING fts5(body)", "INSERT INTO notes VALUES ('hello')", "notes is a virtual table (fts5)"),
            ("", "CREATE VIRTUAL TABLE notes USING fts5(body); INSERT INTO notes VALUES ('hello')", "notes is a virtual table (fts5)"),
            ("", "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1); INSERT INTO boxes VALUES (1, 0, 1)", "boxes is a virtual table (rtree)"),
            ("CREATE TABLE buckia_notes (id INTEGER PRIMARY KEY, v)", "INSERT INTO buckia_notes VALUES (1, 'x')", "buckia_notes"),
        ])
    func diffRefusesUncarried(_ both: String, _ newOnly: String, _ named: String) throws {
        let (folder, old, new) = try Self.pair(both, new: newOnly)
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("out", isDirectory: true)
        let error = try #require(throws: BuckiaError.self) { try DatabaseComparison.diff(from: old, to: new, sender: "u1", in: out) }
        #expect(error.code == .unsupported)
        #expect(error.message.contains(named), "\(error.message)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []).isEmpty)
    }

    @Test("A diff carries the rest beside an unchanged virtual table, and leaves Buckia's bookkeeping out")
    func diffCarriesBesideUnchanged() throws {
        let (folder, old, new) = try Self.pair(
            "CREATE VIRTUAL TABLE notes USING fts5(body); INSERT INTO notes VALUES ('same')",
            new: "UPDATE recordings SET title = 'changed'; CREATE TABLE buckia_applied_changes (ksuid TEXT PRIMARY KEY); INSERT INTO buckia_applied_changes VALUES ('x')")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try #require(try DatabaseComparison.diff(from: old, to: new, sender: "u1", in: folder))
        let summary = try DiffSummary(contentsOf: file)
        #expect(summary.tables.map(\.definition.name) == ["recordings"])
    }

    @Test("An older diff applied after a newer one reports the newer diff and the rows it overwrote; in order, nothing")
    func outOfOrderIsReported() throws {
        let folder = try DB.scratch("order")
        defer { try? FileManager.default.removeItem(at: folder) }
        let base = folder.appendingPathComponent("base.db")
        try DB.make(base, "INSERT INTO recordings (id, title) VALUES (1, 'one'), (2, 'two')")
        var diffs: [URL] = []
        for (index, title) in ["older", "newer"].enumerated() {
            let edited = folder.appendingPathComponent("\(title).db")
            try FileManager.default.copyItem(at: base, to: edited)
            try SQLiteConnection(path: edited.path).execute("UPDATE recordings SET title = '\(title)' WHERE id = 1; INSERT INTO recordings (id, title) VALUES (\(10 + index), 'new')")
            let id = try KSUID(date: Date(timeIntervalSince1970: 1_800_000_000 + Double(index) * 60))
            diffs.append(try #require(try DatabaseComparison.diff(from: base, to: edited, sender: "u1", in: folder, id: id)))
        }
        let outOfOrder = folder.appendingPathComponent("live.db"), inOrder = folder.appendingPathComponent("ordered.db")
        for url in [outOfOrder, inOrder] { try FileManager.default.copyItem(at: base, to: url) }
        func apply(_ diff: URL, to url: URL) throws -> AppliedChange {
            try DiffApplier.apply(diff, to: try SQLiteConnection(path: url.path), options: ApplyOptions(), now: Date(timeIntervalSince1970: 1_800_001_000))
        }
        _ = try apply(diffs[1], to: outOfOrder)
        let late = try apply(diffs[0], to: outOfOrder)
        let newer = try #require(KSUID(diffs[1].deletingPathExtension().lastPathComponent))
        #expect(late.newerApplied == [newer])
        #expect(late.overwrittenCount == 1)
        #expect(late.overwritten == [RowReference(table: "recordings", key: [.integer(1)])])
        let first = try apply(diffs[0], to: inOrder)
        let second = try apply(diffs[1], to: inOrder)
        #expect(first.newerApplied.isEmpty && second.newerApplied.isEmpty && second.overwritten.isEmpty)
    }
}
