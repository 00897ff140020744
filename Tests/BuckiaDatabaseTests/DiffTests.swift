import BuckiaCore
@testable import BuckiaDatabase
import BuckiaSQLite
import BuckiaTestSupport
import BuckiaUserFolder
import Foundation
import Testing

@Suite("Diff files: written, read, applied exactly once")
struct DiffTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    static func manager(_ folder: URL, user: String, database: URL, options: DatabaseManager.Options = .init()) -> DatabaseManager {
        DatabaseManager(
            folderStructure: FolderStructureConfiguration(rootPath: folder.appendingPathComponent("users").path, userId: user), database: database,
            bases: UserFolder.Bases(applicationSupport: folder, documents: folder), options: options, clock: { now })
    }

    @Test("A diff from explicit changes applies row for row, and applying it again changes nothing")
    func roundTrip() async throws {
        let folder = try DB.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let senderDB = folder.appendingPathComponent("a.sqlite"), receiverDB = folder.appendingPathComponent("b.sqlite")
        try DB.make(senderDB)
        try DB.make(receiverDB, "INSERT INTO recordings VALUES (1, 'old title', 'u2', 1.0, NULL), (3, 'to delete', 'u2', 2.0, NULL), (4, 'kept', 'u2', 4.0, NULL)")
        var changes = DatabaseChanges()
        changes.upsert(["id": 1, "title": "Morning take", "owner": "u1", "duration": 61.5, "thumbnail": .blob(Data([0x89, 0x50]))], into: "recordings")
        changes.upsert(["id": 2, "title": "Évening – take ’2’", "owner": nil, "duration": 3, "thumbnail": .blob(Data())], into: "recordings")
        changes.delete(["id": 3], from: "recordings")
        changes.upsert(["recording": 1, "user": "u2", "role": "editor"], into: "shares")
        let sender = Self.manager(folder, user: "u1", database: senderDB, options: .init(outbox: folder.appendingPathComponent("out")))
        let diff = try await sender.createDatabaseDiff(for: changes)
        #expect(diff.lastPathComponent.count == KSUID.textLength + ".sqlite".count)
        let summary = try DiffSummary(contentsOf: diff, now: Self.now)
        #expect(summary.manifest.sender == "u1")
        #expect(summary.tables.map { "\($0.definition.name) \($0.upserts)/\($0.deletes)" } == ["recordings 2/1", "shares 1/0"])

        let receiver = try SQLiteConnection(path: receiverDB.path)
        let change = try DiffApplier.apply(diff, to: receiver, options: ApplyOptions(), now: Self.now)
        #expect(change.upserted == 3 && change.deleted == 1 && !change.wasAlreadyApplied)
        #expect(try DB.dump(receiverDB) == [
            "recordings: integer(1)|text(\"Morning take\")|text(\"u1\")|real(61.5)|blob(2 bytes)",
            "recordings: integer(2)|text(\"Évening – take ’2’\")|null|real(3.0)|blob(0 bytes)",
            "recordings: integer(4)|text(\"kept\")|text(\"u2\")|real(4.0)|null",
            "shares: integer(1)|text(\"u2\")|text(\"editor\")",
        ])
        let before = try DB.bytes(receiverDB)
        let again = try DiffApplier.apply(diff, to: receiver, options: ApplyOptions(), now: Self.now)
        #expect(again.wasAlreadyApplied)
        #expect(try DB.bytes(receiverDB) == before, "a second apply writes nothing")
        let recorded = try receiver.query("SELECT ksuid, sender, upserted, deleted FROM buckia_applied_changes") { "\($0.string(0) ?? "") \($0.string(1) ?? "") \($0.int64(2)) \($0.int64(3))" }
        #expect(recorded == ["\(summary.manifest.id) u1 3 1"])
    }

    @Test("A diff written by the Python script with the stock sqlite3 module applies")
    func pythonWriter() throws {
        let folder = try DB.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let run = try ToolRun.run(path: try PythonProcess.executable(), [DB.makeDiffScript.path, folder.path, "server"], exactEnvironment: ProcessInfo.processInfo.environment)
        #expect(run.status == 0, "\(run.errors)")
        let diff = URL(fileURLWithPath: run.output.trimmingCharacters(in: .whitespacesAndNewlines))
        let database = folder.appendingPathComponent("app.sqlite")
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE recordings (id INTEGER PRIMARY KEY, title TEXT NOT NULL DEFAULT '', owner TEXT, duration REAL, thumbnail BLOB); INSERT INTO recordings (id, title) VALUES (3, 'gone')")
        let change = try DiffApplier.apply(diff, to: connection, options: ApplyOptions(), now: Date())
        #expect(change.sender == "server" && change.upserted == 2 && change.deleted == 1)
        #expect(try DB.dump(database) == [
            "recordings: integer(1)|text(\"Morning take\")|text(\"u1\")|real(61.5)|blob(4 bytes)",
            "recordings: integer(2)|text(\"Évening – take ’2’\")|null|real(3.0)|null",
        ])
        // Into a database without the table, the diff's definition creates it.
        let empty = folder.appendingPathComponent("empty.sqlite")
        let fresh = try SQLiteConnection(path: empty.path)
        let created = try DiffApplier.apply(diff, to: fresh, options: ApplyOptions(), now: Date())
        #expect(created.tablesCreated == ["recordings"])
        let columns = try fresh.query("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('recordings')") { row in
            (0..<5).map { "\(row.value($0))" }.joined(separator: " ")
        }
        #expect(columns == [
            "text(\"id\") text(\"INTEGER\") integer(1) null integer(1)", "text(\"title\") text(\"TEXT\") integer(1) text(\"\\'\\'\") integer(0)",
            "text(\"owner\") text(\"TEXT\") integer(0) text(\"NULL\") integer(0)", "text(\"duration\") text(\"REAL\") integer(0) null integer(0)",
            "text(\"thumbnail\") text(\"BLOB\") integer(0) null integer(0)",
        ])
    }

    @Test("A diff written by Buckia reads in the sqlite3 shell as Docs/Database.md shows")
    func readsInTheShell() async throws {
        let folder = try DB.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("a.sqlite")
        try DB.make(database)
        var changes = DatabaseChanges()
        changes.upsert(["id": 7, "title": "Shared take", "owner": "u1"], into: "recordings")
        changes.delete(["id": 3], from: "recordings")
        let diff = try await Self.manager(folder, user: "u1", database: database, options: .init(outbox: folder)).createDatabaseDiff(for: changes)
        let manifest = try ToolRun.run("sqlite3", [diff.path, "SELECT format_version, ksuid, sender FROM buckia_manifest"])
        #expect(manifest.status == 0, "\(manifest.errors)")
        #expect(manifest.output == "1|\(diff.deletingPathExtension().lastPathComponent)|u1\n")
        let rows = try ToolRun.run("sqlite3", [diff.path, "SELECT t.name, u.* FROM buckia_tables t, buckia_upsert_1 u WHERE t.id = 1; SELECT * FROM buckia_delete_1"])
        #expect(rows.output == "recordings|7|Shared take|u1\n3\n")
        let journal = try ToolRun.run("sqlite3", [diff.path, "PRAGMA journal_mode"])
        #expect(journal.output == "delete\n")
    }
}
