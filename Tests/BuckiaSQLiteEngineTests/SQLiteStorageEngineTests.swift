import BuckiaCore
import BuckiaSQLite
import BuckiaSQLiteEngine
import Foundation
import Testing

/// A fresh folder per test, removed afterwards.
struct EngineFolder: ~Copyable {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sqlite-engine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    var database: URL { url.appendingPathComponent(SQLiteStorageEngine.defaultFileName) }
    deinit { try? FileManager.default.removeItem(at: url) }
}

@Suite("SQLite storage engine")
struct SQLiteStorageEngineTests {
    // Regression: random bytes written into the database file made reads return wrong bytes.
    @Test("A value damaged inside the database file reads as corrupt, never as wrong bytes", arguments: [0, 1500, 2999])
    func damagedValue(_ offset: Int) async throws {
        let folder = try EngineFolder()
        let value = Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) })
        do {
            let engine = try SQLiteStorageEngine(directory: folder.url)
            try await engine.write(value, key: CacheKey(verbatim: "victim"))
            try await engine.write(Data("bystander".utf8), key: CacheKey(verbatim: "other"))
        }
        var file = try Data(contentsOf: folder.database)
        let start = try #require(file.firstRange(of: value)?.lowerBound, "the value is stored contiguously in one page")
        file[start + offset] ^= 0x5A
        try file.write(to: folder.database)
        let engine = try SQLiteStorageEngine(directory: folder.url)
        let error = await #expect(throws: BuckiaError.self) { try await engine.read(key: CacheKey(verbatim: "victim")) }
        #expect(error?.code == .corrupt)
        await #expect(throws: BuckiaError.self) { try await engine.readAllData() }
        #expect(try await engine.read(key: CacheKey(verbatim: "other")) == Data("bystander".utf8))
    }

    @Test("A schema-1 database gains the CRC column, keeps its values, and checks new writes")
    func migratesSchemaOne() async throws {
        let folder = try EngineFolder()
        do {
            let db = try SQLiteConnection(path: folder.database.path)
            try db.execute("""
                CREATE TABLE buckia_kv (key TEXT PRIMARY KEY NOT NULL, data BLOB NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL);
                INSERT INTO buckia_kv VALUES ('old', x'6f6c64', 1, 1);
                PRAGMA application_id = \(0x4243_4B56); PRAGMA user_version = 1;
                """)
        }
        let engine = try SQLiteStorageEngine(directory: folder.url)
        #expect(try await engine.read(key: CacheKey(verbatim: "old")) == Data("old".utf8))
        try await engine.write(Data("new".utf8), key: CacheKey(verbatim: "new"))
        #expect(try await engine.readAllData() == [Data("new".utf8), Data("old".utf8)])
        let db = try SQLiteConnection(path: folder.database.path)
        #expect(try db.query("PRAGMA user_version") { $0.int64(0) } == [2])
        #expect(try db.query("SELECT crc IS NOT NULL FROM buckia_kv ORDER BY key") { $0.int64(0) } == [1, 0])
    }

    @Test("A file that is not a database fails as corrupt and is left untouched")
    func corruptFile() throws {
        let folder = try EngineFolder()
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try garbage.write(to: folder.database)
        let error = #expect(throws: BuckiaError.self) { try SQLiteStorageEngine(directory: folder.url) }
        #expect(error?.code == .corrupt)
        #expect(try Data(contentsOf: folder.database) == garbage)
    }

    @Test("Another application's database is refused and keeps its tables and rows")
    func foreignDatabase() throws {
        let folder = try EngineFolder()
        let other = try SQLiteConnection(path: folder.database.path)
        try other.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 9.5)")
        let error = #expect(throws: BuckiaError.self) { try SQLiteStorageEngine(directory: folder.url) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("invoices") == true)
        #expect(try other.query("SELECT total FROM invoices") { $0.double(0) } == [9.5])
        #expect(try other.query("SELECT count(*) FROM sqlite_schema WHERE name = 'buckia_kv'") { $0.int64(0) } == [0])
    }

    @Test("A database from a newer schema is refused, not downgraded")
    func newerSchema() async throws {
        let folder = try EngineFolder()
        try await SQLiteStorageEngine(directory: folder.url).write(Data("v".utf8), key: CacheKey(verbatim: "k"))
        try SQLiteConnection(path: folder.database.path).execute("PRAGMA user_version = 99")
        let error = #expect(throws: BuckiaError.self) { try SQLiteStorageEngine(directory: folder.url) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("A directory that cannot be created is a typed error")
    func unwritableDirectory() throws {
        let folder = try EngineFolder()
        let file = folder.url.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        let error = #expect(throws: BuckiaError.self) { try SQLiteStorageEngine(directory: file.appendingPathComponent("engine")) }
        #expect(error != nil)
        #expect(try Data(contentsOf: file) == Data("x".utf8))
    }

    // Regression: a synchronous actor method loses to the protocol extension's async default in
    // async code, so this direct call once took the one-by-one default and wrote "new".
    @Test("A failed batch writes nothing, and earlier data survives")
    func batchIsAtomic() async throws {
        let folder = try EngineFolder()
        let engine = try SQLiteStorageEngine(directory: folder.url)
        try await engine.write(Data("old".utf8), key: CacheKey(verbatim: "a"))
        let error = await #expect(throws: BuckiaError.self) {
            try await engine.write([(CacheKey(verbatim: "a"), Data("new".utf8)), (CacheKey(verbatim: String(repeating: "x", count: 10_000)), Data())])
        }
        #expect(error?.code == .invalidPath)
        let value = try await engine.read(key: CacheKey(verbatim: "a"))
        #expect(value.map { String(decoding: $0, as: UTF8.self) } == "old")
        #expect(try await engine.keyCount() == 1)
    }

    @Test("The database runs in WAL mode and is marked as the engine's")
    func walAndMarker() throws {
        let folder = try EngineFolder()
        _ = try SQLiteStorageEngine(directory: folder.url)
        let db = try SQLiteConnection(path: folder.database.path, mode: .readOnly)
        #expect(try db.query("PRAGMA journal_mode") { $0.string(0) } == ["wal"])
        #expect(try db.query("PRAGMA application_id") { $0.int64(0) } == [0x4243_4B56])
    }

    @Test("Bad options are invalid configuration", arguments: [
        EngineConfiguration(type: .sqlite), EngineConfiguration(type: .sqlite, directory: "/tmp/x", options: ["synchronous": "sometimes"]),
    ])
    func badConfiguration(_ configuration: EngineConfiguration) async throws {
        let error = await #expect(throws: BuckiaError.self) { try await SQLiteStorageEngine(configuration: configuration) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("ObjectStorage stores Codable values and reports undecodable ones as corrupt")
    func objectStorage() async throws {
        struct Animal: Codable, Equatable, Sendable { var name: String; var legs: Int }
        let folder = try EngineFolder()
        let engine = try SQLiteStorageEngine(directory: folder.url)
        let animals = ObjectStorage<Animal>(engine: engine)
        try await animals.store([(CacheKey(verbatim: "panda"), Animal(name: "Panda", legs: 4)), (CacheKey(verbatim: "kiwi"), Animal(name: "Kiwi", legs: 2))])
        #expect(try await animals.object(forKey: CacheKey(verbatim: "kiwi")) == Animal(name: "Kiwi", legs: 2))
        #expect(try await animals.allObjects().map(\.name) == ["Kiwi", "Panda"])
        try await engine.write(Data("not json".utf8), key: CacheKey(verbatim: "broken"))
        let error = await #expect(throws: BuckiaError.self) { try await animals.object(forKey: CacheKey(verbatim: "broken")) }
        #expect(error?.code == .corrupt)
        #expect(try await animals.object(forKey: CacheKey(verbatim: "missing")) == nil)
    }
}
