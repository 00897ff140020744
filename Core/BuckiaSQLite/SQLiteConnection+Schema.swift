import BuckiaCore
import Foundation

extension SQLiteConnection {
    /// Makes this database the application's own at the latest schema: checks what the file
    /// is, and runs the migrations it lacks in one transaction (then WAL mode).
    ///
    /// Many processes (or connections) may open one new file at once. What the file is (its
    /// `application_id`, tables and `user_version`) is read in one transaction, a consistent
    /// snapshot, and read again under the write lock before migrating, so one opener migrates
    /// and the others find it done, never half-made.
    ///
    /// - Parameters:
    ///   - applicationID: The `application_id` that marks the file as this kind.
    ///   - migrations: Applying the first `n` gives schema version `n`.
    ///   - kind: What the file is, for messages ("file catalog").
    ///   - operation: The operation errors name.
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a database of another
    ///   application or from a newer Buckia (left untouched).
    package func migrate(applicationID: Int64, migrations: [String], kind: String, operation: String) throws {
        let version = Int64(migrations.count)
        func identity() throws -> (application: Int64, tables: [String], version: Int64) {
            (
                try query("PRAGMA application_id") { $0.int64(0) }.first ?? 0,
                try query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") { $0.string(0) ?? "" },
                try query("PRAGMA user_version") { $0.int64(0) }.first ?? 0
            )
        }
        func check(_ found: (application: Int64, tables: [String], version: Int64)) throws {
            guard found.application == applicationID || (found.application == 0 && found.tables.isEmpty) else {
                throw BuckiaError(
                    .invalidConfiguration,
                    "The database at \(path) is not a \(kind) (tables: \(found.tables.prefix(5).joined(separator: ", "))); it was left untouched.",
                    operation: operation, path: path)
            }
            guard found.version <= version else {
                throw BuckiaError(
                    .invalidConfiguration,
                    "The \(kind) at \(path) was written by a newer Buckia (schema \(found.version); this one reads up to \(version)); it was left untouched.",
                    operation: operation, path: path)
            }
        }
        let found = try transaction(.deferred) { try identity() }
        try check(found)
        guard found.version < version else { return }
        try transaction {
            let current = try identity()
            try check(current)
            guard current.version < version else { return }
            for migration in migrations[Int(current.version)...] { try execute(migration) }
            try execute("PRAGMA application_id = \(applicationID)")
            try execute("PRAGMA user_version = \(version)")
        }
        try enableWAL()
    }

    /// Puts the file in WAL mode (kept in the file, so once is enough). Changing the mode
    /// needs the file to itself, and SQLite answers "busy" at once, without its busy timeout,
    /// while another opener holds it (sixteen openers of a new cache saw that), so this
    /// retries for up to five seconds, backing off.
    func enableWAL() throws {
        var attempt = 0
        while true {
            do {
                let mode = try query("PRAGMA journal_mode") { $0.string(0) ?? "" }.first
                if mode?.lowercased() == "wal" { return }
                try setJournalMode(.wal)
                return
            } catch let error as BuckiaError where error.code == .transient && attempt < 50 {
                attempt += 1
                usleep(UInt32(min(attempt, 20)) * 10_000)
            }
        }
    }
}
