import BuckiaCore
import BuckiaSQLite
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A temporary folder for database files, removed afterwards.
struct DatabaseFolder: ~Copyable {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

@Suite("SQLite connection")
struct SQLiteConnectionTests {
    @Test("Every storage class round-trips, including NULL, empty text, text holding NUL and an empty blob", arguments: [
        SQLiteValue.null, .integer(0), .integer(Int64.min), .integer(Int64.max), .real(-1.5), .text(""), .text("héllo 😀"),
        .text("a\u{0}b"), .text(String(repeating: "long text ", count: 100)), .blob(Data()), .blob(Data([0, 1, 2, 255])),
    ])
    func roundTrip(_ value: SQLiteValue) throws {
        let db = try SQLiteConnection.inMemory()
        try db.execute("CREATE TABLE t (v)")
        try db.run("INSERT INTO t VALUES (?)", [value])
        #expect(try db.query("SELECT v FROM t") { $0.value(0) } == [value])
    }

    @Test("Every connection asks for F_FULLFSYNC, so Apple platforms' syncs reach the disk, not the drive's cache")
    func fullSync() throws {
        let db = try SQLiteConnection.inMemory()
        #expect(try db.query("PRAGMA fullfsync") { $0.int64(0) } == [1])
        #expect(try db.query("PRAGMA checkpoint_fullfsync") { $0.int64(0) } == [1])
    }

    @Test("Prepared statements are cached by their SQL")
    func statementCache() throws {
        let db = try SQLiteConnection.inMemory()
        #expect(try db.prepare("SELECT 1") === db.prepare("SELECT 1"))
    }

    @Test("A throwing transaction rolls back; a nested failure rolls back only the inner work")
    func transactions() throws {
        let db = try SQLiteConnection.inMemory()
        try db.execute("CREATE TABLE t (v INTEGER)")
        struct Failure: Error {}
        #expect(throws: Failure.self) {
            try db.transaction {
                try db.run("INSERT INTO t VALUES (1)")
                throw Failure()
            }
        }
        try db.transaction {
            try db.run("INSERT INTO t VALUES (2)")
            try? db.transaction {
                try db.run("INSERT INTO t VALUES (3)")
                throw Failure()
            }
        }
        #expect(try db.query("SELECT v FROM t") { $0.int64(0) } == [2])
        #expect(!db.isInTransaction)
    }

    @Test("Rows stream one at a time and stop when asked")
    func streaming() throws {
        let db = try SQLiteConnection.inMemory()
        try db.execute("CREATE TABLE t (v INTEGER)")
        try db.transaction { for i in 0..<100 { try db.run("INSERT INTO t VALUES (?)", [.integer(Int64(i))]) } }
        var seen: [Int64] = []
        try db.forEachRow("SELECT v FROM t ORDER BY v") { row in
            seen.append(row.int64(0))
            return seen.count < 5
        }
        #expect(seen == [0, 1, 2, 3, 4])
    }

    @Test("A file database switches to WAL")
    func wal() throws {
        let folder = try DatabaseFolder()
        let db = try SQLiteConnection(path: folder.path("wal.sqlite"))
        #expect(try db.setJournalMode(.wal) == "wal")
    }

    @Test("A file that is not a database fails as corrupt and is left byte-for-byte", arguments: [
        Data("hello, this is a text file and not a database".utf8),
        Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }),
    ])
    func foreignFile(_ contents: Data) throws {
        let folder = try DatabaseFolder()
        let path = folder.path("foreign.sqlite")
        try contents.write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: BuckiaError.self) { try SQLiteConnection(path: path) }
        #expect(error?.code == .corrupt)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == contents)
    }

    @Test("A write blocked by another connection's lock fails as transient after the busy timeout")
    func busy() throws {
        let folder = try DatabaseFolder()
        let path = folder.path("busy.sqlite")
        let first = try SQLiteConnection(path: path)
        try first.execute("CREATE TABLE t (v)")
        let second = try SQLiteConnection(path: path, busyTimeout: .milliseconds(50))
        try first.execute("BEGIN IMMEDIATE")
        let error = #expect(throws: BuckiaError.self) { try second.run("INSERT INTO t VALUES (1)") }
        #expect(error?.code == .transient)
        try first.execute("COMMIT")
    }

    @Test("The online backup copies a live database to a new file atomically")
    func backup() throws {
        let folder = try DatabaseFolder()
        let db = try SQLiteConnection(path: folder.path("live.sqlite"))
        try db.setJournalMode(.wal)
        try db.execute("CREATE TABLE t (v TEXT)")
        try db.run("INSERT INTO t VALUES ('kept')")
        try db.backup(toFile: folder.path("backup.sqlite"))
        let copy = try SQLiteConnection(path: folder.path("backup.sqlite"), mode: .readOnly)
        #expect(try copy.query("SELECT v FROM t") { $0.string(0) } == ["kept"])
        #expect(try copy.quickCheck().isEmpty)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.hasSuffix(".tmp") }
        #expect(leftovers.isEmpty)
    }

    @Test("Binding the wrong number of values is an error, not a silent NULL")
    func bindCount() throws {
        let db = try SQLiteConnection.inMemory()
        let error = #expect(throws: BuckiaError.self) { try db.run("SELECT ?, ?", [1]) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("A read-only connection refuses writes with permissionDenied")
    func readOnly() throws {
        let folder = try DatabaseFolder()
        let path = folder.path("ro.sqlite")
        try SQLiteConnection(path: path).execute("CREATE TABLE t (v)")
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        let error = #expect(throws: BuckiaError.self) { try db.run("INSERT INTO t VALUES (1)") }
        #expect(error?.code == .permissionDenied)
    }
}

@Suite("SQLite and planted links")
struct SQLiteLinkTests {
    @Test("A database is never opened or created through a symbolic link, dangling or not")
    func links() throws {
        let folder = try DatabaseFolder()
        let target = folder.path("target.sqlite")
        #expect(symlink(target, folder.path("dangling.sqlite")) == 0)
        #expect { try SQLiteConnection(path: folder.path("dangling.sqlite")) } throws: { ($0 as? BuckiaError)?.code == .invalidPath }
        #expect(!FileManager.default.fileExists(atPath: target), "nothing was created at the link's target")
        let real = try SQLiteConnection(path: target)
        try real.execute("CREATE TABLE t (x)")
        #expect(symlink(target, folder.path("link.sqlite")) == 0)
        #expect { try SQLiteConnection(path: folder.path("link.sqlite")) } throws: { ($0 as? BuckiaError)?.code == .invalidPath }
        #expect { try SQLiteConnection(path: folder.path("link.sqlite"), mode: .readOnly) } throws: { ($0 as? BuckiaError)?.code == .invalidPath }
    }
}
