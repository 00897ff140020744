import BuckiaCore
import BuckiaSQLite
import Foundation

/// A ``BuckiaCore/StorageEngine`` in one SQLite database: the engine to choose by default.
///
/// One table holds every value. Batches are written in one transaction, an overwrite keeps
/// `createdAt` and moves `updatedAt` (an upsert), and the database runs in WAL mode, so reads
/// proceed on their own connections while a write is in flight. Opening reads no values:
/// it costs the same for ten values or a million.
///
/// The file is marked with an SQLite `application_id`. Opening a file that is not an SQLite
/// database fails with ``BuckiaCore/BuckiaError/Code/corrupt``, and a database that belongs to
/// something else with ``BuckiaCore/BuckiaError/Code/invalidConfiguration``; either way the
/// file is left as it was.
///
/// ```swift
/// let engine = try SQLiteStorageEngine(directory: StorageDirectory.defaultStorageDirectory(appendingPath: "Animals").url)
/// try await engine.write(Data("🐼".utf8), key: CacheKey(verbatim: "panda"))
/// ```
public actor SQLiteStorageEngine: PaginatedStorageEngine, StorageEnginePlugin {
    public static let engineType: EngineType = .sqlite

    /// The file name used inside the engine's directory.
    public static let defaultFileName = "buckia-kv.sqlite3"

    /// A batch is one transaction: ``EngineCapability/atomicBatches``.
    public nonisolated let capabilities: Set<EngineCapability> = [.persistent, .pagination, .atomicBatches]

    /// The database file.
    public nonisolated let fileURL: URL

    private let connections: SQLiteDatabasePool
    private let now: @Sendable () -> Date

    /// Opens (creating if needed) the engine's database in `directory`.
    ///
    /// - Parameter synchronous: `.normal` (default: durable except for the last commits before a
    ///   power loss, which WAL makes safe), `.full` (sync every commit), `.off` or `.extra`.
    /// - Throws: ``BuckiaCore/BuckiaError`` when the folder cannot be created, the file is not a
    ///   database, or the database is not this engine's.
    public init(
        directory: URL, fileName: String = SQLiteStorageEngine.defaultFileName, synchronous: SQLiteConnection.Synchronous = .normal,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        do {
            try LocalFile.createDirectories(directory.path)
        } catch {
            throw BuckiaError.wrapping(error, operation: "open engine", path: directory.path)
        }
        let url = directory.appendingPathComponent(fileName)
        let writer = try SQLiteConnection(path: url.path)
        try SQLiteSchema.prepare(writer, synchronous: synchronous)
        self.fileURL = url
        let path = url.path
        self.connections = SQLiteDatabasePool(primary: writer) {
            let reader = try SQLiteConnection(path: path, mode: .readOnly)
            try SQLiteSchema.tune(reader)
            return reader
        }
        self.now = now
    }

    /// Opens the engine a configuration describes: `directory` (required), options
    /// `fileName` and `synchronous`.
    public init(configuration: EngineConfiguration) async throws {
        let text = configuration.options["synchronous"]?.uppercased() ?? "NORMAL"
        guard let synchronous = SQLiteConnection.Synchronous(rawValue: text), synchronous != .extra else {
            throw BuckiaError(.invalidConfiguration, "The sqlite engine's synchronous option must be NORMAL, FULL or OFF.", path: "options.synchronous")
        }
        try self.init(
            directory: try configuration.requireDirectory(),
            fileName: configuration.options["fileName"] ?? SQLiteStorageEngine.defaultFileName, synchronous: synchronous)
    }

    deinit {
        connections.closeReaders()
    }

    /// An engine in the platform's default storage folder plus `pathComponent` (Bodega's `.default`).
    public static func `default`(appendingPath pathComponent: String = "") throws -> SQLiteStorageEngine {
        try SQLiteStorageEngine(directory: StorageDirectory.defaultStorageDirectory(appendingPath: pathComponent).url)
    }

    // MARK: Writing
    //
    // Every write runs on a blocking pool's threads (`connections.write(_:_:)`), as GRDB runs its
    // writes on a queue of their own: a commit can wait on the disk (an fsync with
    // `synchronous = FULL`, a WAL checkpoint in any mode), and the cooperative pool has only
    // one thread per core. One connection writes, under its lock, so writes stay serial.

    public func write(_ data: Data, key: CacheKey) async throws {
        try key.validate()
        let (connections, time) = (connections, now().timeIntervalSince1970)
        try await connections.write("write") { try $0.run(SQLiteSchema.upsert, SQLiteSchema.upsertValues(key, data, time)) }
    }

    public func write(_ dataAndKeys: [(key: CacheKey, data: Data)]) async throws {
        for (key, _) in dataAndKeys { try key.validate() }
        let (connections, time) = (connections, now().timeIntervalSince1970)
        try await connections.write("write") { db in
            try db.transaction {
                for (key, data) in dataAndKeys { try db.run(SQLiteSchema.upsert, SQLiteSchema.upsertValues(key, data, time)) }
            }
        }
    }

    public func remove(key: CacheKey) async throws {
        let connections = connections
        try await connections.write("remove") { try $0.run("DELETE FROM buckia_kv WHERE key = ?1", [.text(key.value)]) }
    }

    public func remove(keys: [CacheKey]) async throws {
        let connections = connections
        try await connections.write("remove") { db in
            try db.transaction {
                for key in keys { try db.run("DELETE FROM buckia_kv WHERE key = ?1", [.text(key.value)]) }
            }
        }
    }

    public func removeAllData() async throws {
        let connections = connections
        try await connections.write("remove all") { try $0.run("DELETE FROM buckia_kv") }
    }

    // MARK: Reading (on the primary when free, else on reader connections, concurrently with writes)

    public nonisolated func read(key: CacheKey) async throws -> Data? {
        try connections.read { db in
            try db.query("SELECT key, data, crc FROM buckia_kv WHERE key = ?1", [.text(key.value)]) {
                try SQLiteSchema.checkedData($0, path: db.path)
            }.first
        }
    }

    public nonisolated func readDataAndKeys(keys: [CacheKey]) async throws -> [(key: CacheKey, data: Data)] {
        try connections.read { db in
            try db.transaction(.deferred) {
                try keys.compactMap { key in
                    try db.query("SELECT key, data, crc FROM buckia_kv WHERE key = ?1", [.text(key.value)]) {
                        (key, try SQLiteSchema.checkedData($0, path: db.path))
                    }.first
                }
            }
        }
    }

    public nonisolated func readAllDataAndKeys() async throws -> [(key: CacheKey, data: Data)] {
        try connections.read { db in
            try db.query("SELECT key, data, crc FROM buckia_kv ORDER BY key") { try SQLiteSchema.checkedRow($0, path: db.path) }
        }
    }

    public nonisolated func readAllData() async throws -> [Data] {
        try connections.read { db in
            try db.query("SELECT key, data, crc FROM buckia_kv ORDER BY key") { try SQLiteSchema.checkedData($0, path: db.path) }
        }
    }

    public nonisolated func readDataAndKeys(after cursor: CacheKey?, limit: Int) async throws -> [(key: CacheKey, data: Data)] {
        try connections.read { db in
            let row: (SQLiteRow) throws -> (key: CacheKey, data: Data) = { try SQLiteSchema.checkedRow($0, path: db.path) }
            if let cursor {
                return try db.query("SELECT key, data, crc FROM buckia_kv WHERE key > ?1 ORDER BY key LIMIT ?2", [.text(cursor.value), .integer(Int64(limit))], row)
            }
            return try db.query("SELECT key, data, crc FROM buckia_kv ORDER BY key LIMIT ?1", [.integer(Int64(limit))], row)
        }
    }

    public nonisolated func keyExists(_ key: CacheKey) async throws -> Bool {
        try connections.read { db in
            try !db.query("SELECT 1 FROM buckia_kv WHERE key = ?1", [.text(key.value)]) { _ in true }.isEmpty
        }
    }

    public nonisolated func keyCount() async throws -> Int {
        try connections.read { db in
            try db.query("SELECT count(*) FROM buckia_kv") { Int($0.int64(0)) }.first ?? 0
        }
    }

    public nonisolated func allKeys() async throws -> [CacheKey] {
        try connections.read { db in
            try db.query("SELECT key FROM buckia_kv ORDER BY key") { CacheKey(verbatim: $0.string(0) ?? "") }
        }
    }

    public nonisolated func createdAt(key: CacheKey) async throws -> Date? {
        try timestamp("created_at", key)
    }

    public nonisolated func updatedAt(key: CacheKey) async throws -> Date? {
        try timestamp("updated_at", key)
    }

    private nonisolated func timestamp(_ column: String, _ key: CacheKey) throws -> Date? {
        try connections.read { db in
            try db.query("SELECT \(column) FROM buckia_kv WHERE key = ?1", [.text(key.value)]) {
                Date(timeIntervalSince1970: $0.double(0))
            }.first
        }
    }
}
