import BuckiaCore
@testable import BuckiaDatabase
import BuckiaSQLite
import Foundation
import Testing

/// The schema allow-list, conflict policies, and the manager's inbound processing.
@Suite("Applying diffs: schema changes, conflicts, inbound processing")
struct ApplyTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    static func diff(_ folder: URL, _ changes: DatabaseChanges, from database: URL? = nil, at date: Date = now) throws -> URL {
        let connection = try database.map { try SQLiteConnection(path: $0.path, mode: .readOnly) }
        return try changes.write(to: folder, sender: "u9", id: try KSUID(date: date), createdAt: date, database: connection)
    }

    @Test("A diff creates a missing table and adds missing columns, nullable or with a literal default")
    func schemaGrows() throws {
        let folder = try DB.scratch("apply")
        defer { try? FileManager.default.removeItem(at: folder) }
        var changes = DatabaseChanges()
        changes.define(TableDefinition("recordings", columns: [
            ColumnDefinition("id", type: "INTEGER", primaryKey: 1), ColumnDefinition("title", type: "TEXT"),
            ColumnDefinition("rating", type: "INTEGER", notNull: true, default: 0), ColumnDefinition("tag", type: "VARCHAR(20)"),
            ColumnDefinition("weight", type: "REAL", default: 1.5), ColumnDefinition("seal", type: "BLOB", default: .blob(Data([0xAB]))),
        ]))
        changes.upsert(["id": 1, "title": "x", "rating": 5, "tag": "it's", "weight": 2.0, "seal": nil], into: "recordings")
        changes.define(TableDefinition("comments", columns: [
            ColumnDefinition("recording", type: "INTEGER", notNull: true, primaryKey: 1), ColumnDefinition("at", type: "INTEGER", notNull: true, primaryKey: 2),
            ColumnDefinition("body", type: "TEXT", notNull: true, default: "it's ''quoted''"),
        ]))
        changes.upsert(["recording": 1, "at": 100, "body": "hello"], into: "comments")
        let file = try Self.diff(folder, changes)
        let database = folder.appendingPathComponent("app.sqlite")
        let connection = try DB.make(database, "INSERT INTO recordings (id, title) VALUES (2, 'kept')")
        let change = try DiffApplier.apply(file, to: connection, options: ApplyOptions(), now: Self.now)
        #expect(change.tablesCreated == ["comments"])
        #expect(change.columnsAdded == ["recordings.rating", "recordings.tag", "recordings.weight", "recordings.seal"])
        #expect(try DB.dumpTable(database, "recordings") == [
            "recordings: integer(1)|text(\"x\")|null|null|null|integer(5)|text(\"it\\'s\")|real(2.0)|null",
            "recordings: integer(2)|text(\"kept\")|null|null|null|integer(0)|null|real(1.5)|blob(1 bytes)",
        ])
        // The comments table, and the defaults as the diff gave them.
        #expect(try connection.query("INSERT INTO comments (recording, at) VALUES (2, 1) RETURNING body") { $0.string(0) ?? "" } == ["it's ''quoted''"])
        #expect(try connection.query("SELECT pk FROM pragma_table_info('comments') ORDER BY cid") { $0.int64(0) } == [1, 2, 0])
    }

    @Test("The conflict policy decides rows on both sides: incoming wins, local kept, or a closure merges", arguments: ["incoming", "local", "merge"])
    func conflicts(_ policy: String) throws {
        let folder = try DB.scratch("apply")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("app.sqlite")
        let connection = try DB.make(database, "INSERT INTO recordings VALUES (1, 'local title', 'u1', 10.0, NULL), (2, 'same', 'u1', 1.0, NULL)")
        var changes = DatabaseChanges()
        changes.upsert(["id": 1, "title": "their title", "owner": "u2", "duration": 11.0], into: "recordings")
        changes.upsert(["id": 2, "title": "same", "owner": "u1", "duration": 1.0], into: "recordings")
        changes.upsert(["id": 3, "title": "new", "owner": "u2", "duration": 2.0], into: "recordings")
        let file = try Self.diff(folder, changes, from: database)
        let seen = Locked<[String]>([])
        let rule: RowConflictPolicy = switch policy {
        case "incoming": .incomingWins
        case "local": .keepLocal
        default: .resolve { conflict in
            seen.withLock { $0.append("\(conflict.table) \(conflict.local["title"] ?? .null) \(conflict.incoming["title"] ?? .null)") }
            return .merged(["title": conflict.local["title"] ?? .null, "owner": "merged"])
        }
        }
        _ = try DiffApplier.apply(file, to: connection, options: ApplyOptions(policies: ["recordings": rule]), now: Self.now)
        let first = try DB.dumpTable(database, "recordings").first
        switch policy {
        case "incoming": #expect(first == "recordings: integer(1)|text(\"their title\")|text(\"u2\")|real(11.0)|null")
        case "local": #expect(first == "recordings: integer(1)|text(\"local title\")|text(\"u1\")|real(10.0)|null")
        default:
            #expect(first == "recordings: integer(1)|text(\"local title\")|text(\"merged\")|real(11.0)|null")
            #expect(seen.withLock { $0 } == ["recordings text(\"local title\") text(\"their title\")"], "called for the differing row only")
        }
        #expect(try DB.dumpTable(database, "recordings").count == 3, "the new row is inserted under every policy")
    }

    @Test("processInboundChanges applies in KSUID order, refuses a hostile file without stopping, and settles both")
    func inbound() async throws {
        let folder = try DB.scratch("inbound")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("app.sqlite")
        try DB.make(database)
        let manager = DiffTests.manager(folder, user: "u1", database: database)
        let inbound = try manager.userFolder().inbound
        // Two diffs that touch the same row: applied oldest first, the later one wins.
        var first = DatabaseChanges(), second = DatabaseChanges()
        first.upsert(["id": 1, "title": "first"], into: "recordings")
        second.upsert(["id": 1, "title": "second"], into: "recordings")
        let later = try Self.diff(inbound, second, from: database, at: Self.now)
        let earlier = try Self.diff(inbound, first, from: database, at: Self.now.addingTimeInterval(-60))
        // A hostile one named between them.
        let hostile = try DiffCorpusTests.diff(in: "trigger")
        let hostileName = try KSUID(date: Self.now.addingTimeInterval(-30)).description + ".sqlite"
        try FileManager.default.copyItem(at: hostile, to: inbound.appendingPathComponent(hostileName))

        let applied = try await manager.processInboundChanges()
        #expect(applied.map(\.file?.lastPathComponent) == [earlier.lastPathComponent, later.lastPathComponent])
        #expect(try DB.dumpTable(database, "recordings") == ["recordings: integer(1)|text(\"second\")|null|null|null"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: inbound.path) == [hostileName + ".refused"])
        let status = try await manager.status()
        #expect(status.appliedCount == 2 && status.refused.count == 1 && status.pending.isEmpty)
        #expect(status.refused.first?.reason.contains("trigger") == true, "\(status.refused)")
        let history = try await manager.inboundHistory()
        #expect(history.newest?.description == later.deletingPathExtension().lastPathComponent)
        #expect(history.settled.count == 3, "both applied and the refused one")
        #expect(try await manager.processInboundChanges().isEmpty)
    }

    @Test("A diff of two database files turns a copy of the old one into the new one, row for row")
    func comparison() throws {
        let folder = try DB.scratch("compare")
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = folder.appendingPathComponent("old.sqlite"), new = folder.appendingPathComponent("new.sqlite")
        let copy = folder.appendingPathComponent("copy.sqlite")
        let rows = "INSERT INTO recordings VALUES (1, 'a', 'u1', 1.0, NULL), (2, 'b', NULL, 2.0, X'00'), (3, 'c', 'u1', 3.0, NULL); INSERT INTO shares VALUES (1, 'u2', 'viewer');"
        try DB.make(old, rows)
        try DB.make(copy, rows)
        try DB.make(new, rows + """
            UPDATE recordings SET title = 'b, renamed', thumbnail = NULL WHERE id = 2; DELETE FROM recordings WHERE id = 3;
            INSERT INTO recordings VALUES (4, 'd', 'u2', 4.5, X'FF'); ALTER TABLE recordings ADD COLUMN rating INTEGER;
            UPDATE recordings SET rating = 5 WHERE id = 1; CREATE TABLE tags (recording INTEGER, tag TEXT, PRIMARY KEY (recording, tag));
            INSERT INTO tags VALUES (1, 'sunrise'), (4, 'city');
            """)
        let same = try DatabaseComparison.diff(from: old, to: copy, sender: "u1", in: folder, now: Self.now)
        #expect(same == nil, "identical databases make no diff")
        let file = try #require(try DatabaseComparison.diff(from: old, to: new, sender: "u1", in: folder, now: Self.now))
        let summary = try DiffSummary(contentsOf: file, now: Self.now)
        #expect(summary.tables.map { "\($0.definition.name) \($0.upserts)/\($0.deletes)" } == ["recordings 3/1", "tags 2/0"], "shares is unchanged and left out")
        let connection = try SQLiteConnection(path: copy.path)
        _ = try DiffApplier.apply(file, to: connection, options: ApplyOptions(), now: Self.now)
        #expect(try DB.dump(copy) == DB.dump(new))
        // What the format cannot carry is refused.
        try connection.execute("DROP TABLE tags")
        let error = #expect(throws: BuckiaError.self) { try DatabaseComparison.diff(from: new, to: copy, sender: "u1", in: folder, now: Self.now) }
        #expect(error?.code == .unsupported)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).allSatisfy { !$0.hasPrefix(".buckia-") }, "no temporary left")
    }
}
