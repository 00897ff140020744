import BuckiaCore
import BuckiaSQLite
import Foundation

/// The engine's table, its marker, and the checks that keep it off other databases.
enum SQLiteSchema {
    /// `BCKV`: marks a database as this engine's (`PRAGMA application_id`).
    static let applicationID: Int64 = 0x4243_4B56
    /// The schema version this code reads and writes (`PRAGMA user_version`).
    static let version: Int64 = 1

    static let create = """
        CREATE TABLE IF NOT EXISTS buckia_kv (
            key TEXT PRIMARY KEY NOT NULL,
            data BLOB NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )
        """

    /// Inserts a value, or replaces it keeping `created_at`.
    static let upsert = """
        INSERT INTO buckia_kv (key, data, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
        ON CONFLICT (key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
        """

    /// Checks the database is new or ours, creates the table, and sets WAL.
    static func prepare(_ db: SQLiteConnection, synchronous: String) throws {
        let application = try db.query("PRAGMA application_id") { $0.int64(0) }.first ?? 0
        let tables = try db.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") { $0.string(0) ?? "" }
        if application != applicationID {
            guard application == 0, tables.isEmpty else {
                let listed = tables.prefix(5).joined(separator: ", ")
                throw BuckiaError(
                    .invalidConfiguration,
                    "The database belongs to another application (tables: \(listed.isEmpty ? "none" : listed)); it was left untouched. Point the sqlite engine at a folder of its own.",
                    operation: "open engine", path: db.path)
            }
        } else {
            let found = try db.query("PRAGMA user_version") { $0.int64(0) }.first ?? 0
            guard found <= version else {
                throw BuckiaError(
                    .invalidConfiguration,
                    "The database was written by a newer Buckia (schema \(found), this one reads \(version)); it was left untouched.",
                    operation: "open engine", path: db.path)
            }
        }
        try db.setJournalMode(.wal)
        try db.setSynchronous(synchronous)
        try db.transaction {
            try db.execute(create)
            try db.execute("PRAGMA application_id = \(applicationID)")
            try db.execute("PRAGMA user_version = \(version)")
        }
    }
}

/// Reader connections handed out one caller at a time, so reads run in parallel with each
/// other and with the actor's writer (WAL lets readers see the last commit).
///
/// `@unchecked Sendable`: the only mutable state, the idle list, is guarded by the lock, and
/// a connection is used by exactly one caller between `take` and `give back`.
final class SQLiteReaderPool: @unchecked Sendable {
    private let path: String
    private let lock = NSLock()
    private var idle: [SQLiteConnection] = []
    private let maximumIdle = 8

    init(path: String) { self.path = path }

    func withConnection<Result>(_ body: (SQLiteConnection) throws -> Result) throws -> Result {
        let connection = try lock.withLock { idle.popLast() } ?? SQLiteConnection(path: path, mode: .readOnly)
        defer {
            lock.withLock {
                if idle.count < maximumIdle { idle.append(connection) }
            }
        }
        return try body(connection)
    }
}
