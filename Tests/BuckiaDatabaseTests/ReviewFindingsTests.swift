import BuckiaCore
@testable import BuckiaDatabase
import BuckiaSQLite
import Foundation
import Testing

/// The cases a review of the first version found, each shown failing against it.
@Suite("Database exchange: what the review found")
struct ReviewFindingsTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    @Test("Declared types: type names pass, anything with a keyword in it is refused", arguments: [
        ("INTEGER", true), ("TEXT", true), ("", true), ("VARCHAR(20)", true), ("DECIMAL(10, 2)", true), ("DOUBLE PRECISION", true),
        ("UNSIGNED BIG INT", true), ("DATETIME", true), ("BOOLEAN", true), ("NVARCHAR(100)", true), ("FLOAT", true), ("TIMESTAMP", true),
        ("INTEGER CHECK (0)", false), ("TEXT NOT NULL", false), ("INTEGER REFERENCES recordings ON DELETE CASCADE", false),
        ("INT AS (1)", false), ("TEXT UNIQUE", false), ("TEXT COLLATE NOCASE", false), ("TEXT DEFAULT 1", false), ("TEXT)", false),
    ])
    func declaredTypes(_ type: String, _ accepted: Bool) {
        #expect(DiffRules.isPlainType(type) == accepted)
    }

    @Test("Literal defaults read back as values; expressions are not literals", arguments: [
        ("0", SQLiteValue.integer(0)), ("-12", .integer(-12)), ("1.5", .real(1.5)), ("'it''s'", .text("it's")), ("X'AB01'", .blob(Data([0xAB, 0x01]))),
        ("NULL", .null), ("''", .text("")),
    ])
    func literals(_ sql: String, _ value: SQLiteValue) {
        #expect(DiffRules.parseLiteral(sql) == value)
    }

    @Test("Expressions and joined strings are not literal defaults", arguments: ["CURRENT_TIMESTAMP", "'a' || 'b'", "(1 + 2)", "'a'b'", "abs(-1)"])
    func notLiterals(_ sql: String) {
        #expect(DiffRules.parseLiteral(sql) == nil)
    }

    @Test("A refused file named in 2150 does not move the listing past every real change")
    func futureNamedRefusal() async throws {
        let folder = try DB.scratch("review")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("app.sqlite")
        try DB.make(database)
        let manager = DiffTests.manager(folder, user: "u1", database: database)
        let inbound = try manager.userFolder().inbound
        var changes = DatabaseChanges()
        changes.upsert(["id": 1, "title": "real"], into: "recordings")
        let real = try ApplyTests.diff(inbound, changes, from: database, at: Self.now)
        let future = KSUID(timestamp: UInt32.max - 10, payload: [1, 2, 3])
        try Data("not a database".utf8).write(to: inbound.appendingPathComponent("\(future).sqlite"))
        _ = try await manager.processInboundChanges()
        let history = try await manager.inboundHistory()
        #expect(history.newest?.description == real.deletingPathExtension().lastPathComponent, "the newest applied, not the refused 2150 name")
        #expect(history.settled.contains(future))
    }

    @Test("A diff refused for this database's state stays, is retried, and applies once the app has migrated")
    func retriedAfterMigration() async throws {
        let folder = try DB.scratch("review")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("app.sqlite")
        let connection = try DB.make(database, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, author TEXT NOT NULL)")
        let manager = DiffTests.manager(folder, user: "u1", database: database)
        let inbound = try manager.userFolder().inbound
        var changes = DatabaseChanges()
        changes.define(TableDefinition("notes", columns: [ColumnDefinition("id", type: "INTEGER", primaryKey: 1), ColumnDefinition("body", type: "TEXT")]))
        changes.upsert(["id": 1, "body": "hello"], into: "notes")
        let file = try ApplyTests.diff(inbound, changes, at: Self.now)
        // The local `author` is required and the diff does not give it: refused, for now.
        #expect(try await manager.processInboundChanges().isEmpty)
        #expect(FileManager.default.fileExists(atPath: file.path), "the file stays to be retried")
        var history = try await manager.inboundHistory()
        #expect(!history.settled.contains(try #require(KSUID(file.deletingPathExtension().lastPathComponent))), "not settled")
        #expect(try await manager.status().refused.count == 1)
        // The app migrates: author gets a default. The next run applies the diff.
        try connection.execute("CREATE TABLE notes2 (id INTEGER PRIMARY KEY, body TEXT NOT NULL, author TEXT NOT NULL DEFAULT 'unknown'); INSERT INTO notes2 SELECT * FROM notes; DROP TABLE notes; ALTER TABLE notes2 RENAME TO notes")
        let applied = try await manager.processInboundChanges()
        #expect(applied.count == 1)
        #expect(try DB.dumpTable(database, "notes") == ["notes: integer(1)|text(\"hello\")|text(\"unknown\")"])
        #expect(try await manager.status().refused.isEmpty, "no longer listed as refused")
        history = try await manager.inboundHistory()
        #expect(history.settled.count == 1)
    }

    @Test("A recorded change to a table keyed (b, a) sends its key in key order")
    func recorderKeyOrder() throws {
        let folder = try DB.scratch("review")
        defer { try? FileManager.default.removeItem(at: folder) }
        let app = folder.appendingPathComponent("app.sqlite"), copy = folder.appendingPathComponent("copy.sqlite")
        let schema = "CREATE TABLE m (a INTEGER, b INTEGER, v TEXT, PRIMARY KEY (b, a)); INSERT INTO m VALUES (1, 2, 'one-two'), (2, 1, 'two-one');"
        let connection = try SQLiteConnection(path: app.path)
        try connection.execute(schema)
        try SQLiteConnection(path: copy.path).execute(schema)
        let recorder = try ChangeRecorder(recording: connection)
        try connection.execute("DELETE FROM m WHERE a = 1 AND b = 2; UPDATE m SET v = 'changed' WHERE a = 2 AND b = 1")
        let diff = try #require(try recorder.writeDiff(to: folder, sender: "u1", id: try KSUID(date: Self.now), createdAt: Self.now))
        _ = try DiffApplier.apply(diff, to: try SQLiteConnection(path: copy.path), options: ApplyOptions(), now: Self.now)
        #expect(try DB.dump(copy) == DB.dump(app))
        #expect(try DB.dump(copy) == ["m: integer(2)|integer(1)|text(\"changed\")"])
    }

    @Test("A diff of two files sees a change a NOCASE column or an untyped one hides, leaves generated columns out and carries literal defaults")
    func comparisonDetails() throws {
        let folder = try DB.scratch("review")
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = folder.appendingPathComponent("old.sqlite"), new = folder.appendingPathComponent("new.sqlite"), copy = folder.appendingPathComponent("copy.sqlite")
        let schema = "CREATE TABLE p (id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE, x, twice INTEGER GENERATED ALWAYS AS (id * 2), flags INTEGER NOT NULL DEFAULT 0);"
        for url in [old, copy] { try SQLiteConnection(path: url.path).execute(schema + "INSERT INTO p (id, name, x) VALUES (1, 'bob', 1), (2, 'ann', 2);") }
        try SQLiteConnection(path: new.path).execute(schema + "INSERT INTO p (id, name, x) VALUES (1, 'Bob', 1), (2, 'ann', 2.0);")
        let file = try #require(try DatabaseComparison.diff(from: old, to: new, sender: "u1", in: folder, now: Self.now))
        let summary = try DiffSummary(contentsOf: file, now: Self.now)
        let table = try #require(summary.tables.first)
        #expect(table.upserts == 2, "'bob' → 'Bob' and 2 → 2.0 are changes")
        #expect(!table.definition.columns.contains { $0.name == "twice" }, "a generated column is not sent")
        #expect(table.definition.columns.first { $0.name == "flags" }?.defaultValue == .integer(0), "a literal default goes with its column")
        _ = try DiffApplier.apply(file, to: try SQLiteConnection(path: copy.path), options: ApplyOptions(), now: Self.now)
        let rows = try SQLiteConnection(path: copy.path).query("SELECT name, typeof(x) FROM p ORDER BY id") { "\($0.string(0) ?? "") \($0.string(1) ?? "")" }
        #expect(rows == ["Bob integer", "ann real"])
    }
}
