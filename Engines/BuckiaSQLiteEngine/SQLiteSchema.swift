import BuckiaCore
import BuckiaSQLite
import Foundation

/// The engine's table, its marker, and the checks that keep it off other databases.
enum SQLiteSchema {
    /// `BCKV`: marks a database as this engine's (`PRAGMA application_id`).
    static let applicationID: Int64 = 0x4243_4B56
    /// The schema version this code reads and writes (`PRAGMA user_version`). Version 2 added
    /// `crc`; a version 1 database gains the column (NULL, unchecked, until each value is
    /// written again) when it is first opened.
    static let version: Int64 = 2

    static let create = """
        CREATE TABLE IF NOT EXISTS buckia_kv (
            key TEXT PRIMARY KEY NOT NULL,
            data BLOB NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            crc INTEGER
        )
        """

    /// Inserts a value, or replaces it keeping `created_at`.
    static let upsert = """
        INSERT INTO buckia_kv (key, data, created_at, updated_at, crc) VALUES (?1, ?2, ?3, ?3, ?4)
        ON CONFLICT (key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at, crc = excluded.crc
        """

    /// The values an upsert binds for `key` and `data` at `time`.
    static func upsertValues(_ key: CacheKey, _ data: Data, _ time: Double) -> [SQLiteValue] {
        [.text(key.value), .blob(data), .real(time), .integer(Int64(crc(key: key.value, data: data)))]
    }

    /// The CRC-32C of a row's key bytes followed by its value: it catches damaged values and a
    /// damaged index that returns another key's row.
    static func crc(key: String, data: Data) -> UInt32 {
        CRC32C.checksum(data, seed: CRC32C.checksum(utf8: key))
    }

    /// Reads a value row (`key, data, crc` from column `first` on) and checks it.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` when the bytes do not match the row's CRC.
    static func checkedRow(_ row: SQLiteRow, from first: Int = 0, path: String) throws -> (key: CacheKey, data: Data) {
        try check(row, from: first, path: path)
        return (CacheKey(verbatim: row.string(first) ?? ""), row.data(first + 1) ?? Data())
    }

    /// The value of a row (`key, data, crc` from column `first` on), checked: the CRC is taken
    /// over the bytes where SQLite holds them, and no key string is made unless it is damaged.
    static func checkedData(_ row: SQLiteRow, from first: Int = 0, path: String) throws -> Data {
        try check(row, from: first, path: path)
        return row.data(first + 1) ?? Data()
    }

    private static func check(_ row: SQLiteRow, from first: Int, path: String) throws {
        guard !row.isNull(first + 2) else { return }  // a version 1 row, not yet rewritten
        let keyCRC = row.withBytes(first) { CRC32C.checksum($0) }
        let actual = row.withBytes(first + 1) { CRC32C.checksum($0, seed: keyCRC) }
        guard UInt32(truncatingIfNeeded: row.int64(first + 2)) == actual else {
            let key = row.string(first) ?? ""
            throw BuckiaError(
                .corrupt,
                "The value stored under \(key.debugDescription) does not match its CRC-32C: the database file was damaged. Restore it from a backup, or write the key again.",
                operation: "read", path: path)
        }
    }

    /// Checks the database is new or ours, creates the table, and sets WAL.
    static func prepare(_ db: SQLiteConnection, synchronous: SQLiteConnection.Synchronous) throws {
        let application = try db.query("PRAGMA application_id") { $0.int64(0) }.first ?? 0
        let tables = try db.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") { $0.string(0) ?? "" }
        try tune(db)
        try db.setSynchronous(synchronous)
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
            // An existing database of this schema needs no writes to open: opening stays a few
            // reads however many values it holds.
            if found == version, tables.contains("buckia_kv") { return }
            if found == 1, tables.contains("buckia_kv") {
                try db.transaction {
                    try db.execute("ALTER TABLE buckia_kv ADD COLUMN crc INTEGER")
                    try db.execute("PRAGMA user_version = \(version)")
                }
                return
            }
        }
        try db.setJournalMode(.wal)
        try db.transaction {
            try db.execute(create)
            try db.execute("PRAGMA application_id = \(applicationID)")
            try db.execute("PRAGMA user_version = \(version)")
        }
    }
}

extension SQLiteSchema {
    /// Per-connection settings: reads through a memory map skip copying pages into each
    /// connection's own cache, which matters for readers that start cold.
    static func tune(_ db: SQLiteConnection) throws {
        try db.execute("PRAGMA mmap_size = 1073741824")
    }
}
