import BuckiaCore
import CSQLite
import Foundation

extension SQLiteConnection {
    /// When a transaction takes its write lock.
    public enum TransactionKind: String, Sendable {
        /// At the first write (SQLite's default).
        case deferred = "DEFERRED"
        /// At once: the right choice for read-modify-write, as it cannot fail half-way with BUSY.
        case immediate = "IMMEDIATE"
        /// At once, excluding readers too (outside WAL).
        case exclusive = "EXCLUSIVE"
    }

    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws.
    ///
    /// Nested calls use savepoints, so an inner failure rolls back only the inner work.
    public func transaction<Result>(_ kind: TransactionKind = .immediate, _ body: () throws -> Result) throws -> Result {
        if isInTransaction {
            let name = "buckia_\(UInt32.random(in: 0...UInt32.max))"
            try execute("SAVEPOINT \(name)")
            do {
                let result = try body()
                try execute("RELEASE \(name)")
                return result
            } catch {
                try? execute("ROLLBACK TO \(name)")
                try? execute("RELEASE \(name)")
                throw error
            }
        }
        try execute("BEGIN \(kind.rawValue)")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// SQLite's journal modes.
    public enum JournalMode: String, Sendable {
        case delete = "DELETE"
        case wal = "WAL"
        case memory = "MEMORY"
        case off = "OFF"
    }

    /// Sets the journal mode and returns the mode in force (in-memory databases stay `memory`).
    @discardableResult
    public func setJournalMode(_ mode: JournalMode) throws -> String {
        try query("PRAGMA journal_mode = \(mode.rawValue)") { $0.string(0) ?? "" }.first ?? ""
    }

    /// How often SQLite waits for the disk (`PRAGMA synchronous`): a closed set, so nothing a
    /// caller passes is written into SQL.
    public enum Synchronous: String, Sendable, CaseIterable {
        /// Never: fastest, and a power loss can corrupt the database.
        case off = "OFF"
        /// At checkpoints: durable with WAL except for the last commits before a power loss.
        case normal = "NORMAL"
        /// At every commit.
        case full = "FULL"
        /// At every commit, and the journal's folder too.
        case extra = "EXTRA"
    }

    /// Sets `PRAGMA synchronous`.
    public func setSynchronous(_ level: Synchronous) throws {
        try execute("PRAGMA synchronous = \(level.rawValue)")
    }

    /// Copies this database into `destination` with SQLite's online backup API, while this
    /// connection stays usable, `pagesPerStep` pages at a time (-1: all at once).
    public func backup(to destination: SQLiteConnection, pagesPerStep: Int32 = -1) throws {
        try copyPages(to: destination, pagesPerStep: pagesPerStep) {}
    }

    /// The backup loop: steps until done, waiting on a lock, running `afterStep` between steps.
    private func copyPages(to destination: SQLiteConnection, pagesPerStep: Int32, afterStep: () throws -> Void) throws {
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw destination.error(sqlite3_errcode(destination.handle), operation: "backup")
        }
        var status: Int32
        var waits = 0
        repeat {
            status = sqlite3_backup_step(backup, pagesPerStep)
            if status == SQLITE_BUSY || status == SQLITE_LOCKED {
                // Another connection holds the lock: wait, but not for ever (30 s).
                waits += 1
                if waits > 3000 { break }
                sqlite3_sleep(10)
            }
            if status == SQLITE_OK {
                do {
                    try afterStep()
                } catch {
                    sqlite3_backup_finish(backup)
                    throw error
                }
            }
        } while status == SQLITE_OK || status == SQLITE_BUSY || status == SQLITE_LOCKED
        let finish = sqlite3_backup_finish(backup)
        guard status == SQLITE_DONE, finish == SQLITE_OK else {
            throw destination.error(status == SQLITE_DONE ? finish : status, operation: "backup")
        }
    }

    /// Copies this database into `destination` with SQLite's online backup API, `pagesPerStep`
    /// pages at a time, inside one read transaction held on this connection for the whole copy:
    /// one consistent snapshot that writes by other connections do not restart (a stepped
    /// backup without it starts over whenever another connection writes, and under a steady
    /// writer may never finish). `afterStep` runs between steps: to pace the copy, or to flush
    /// what it wrote so far. In WAL mode other connections keep writing throughout; in
    /// rollback-journal mode they wait for the copy to end.
    public func backup(to destination: SQLiteConnection, pagesPerStep: Int32, holdingSnapshot: Bool, afterStep: () throws -> Void) throws {
        guard holdingSnapshot else { return try backup(to: destination, pagesPerStep: pagesPerStep) }
        try execute("BEGIN DEFERRED")
        defer { if isInTransaction { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) } }
        // A read starts the read transaction (and takes the WAL snapshot) now.
        try execute("SELECT count(*) FROM sqlite_schema")
        try copyPages(to: destination, pagesPerStep: pagesPerStep, afterStep: afterStep)
        try execute("COMMIT")
    }

    /// Copies this database to a new file at `path` atomically: the backup is written beside
    /// it and renamed into place, so `path` holds the old copy or the new one.
    public func backup(toFile path: String) throws {
        // A device or FIFO at `path` is refused before the temporary exists.
        try LocalFile.checkReplaceable(path)
        let temporary = path + ".buckia-\(UUID().uuidString).tmp"
        do {
            let destination = try SQLiteConnection(path: temporary)
            try backup(to: destination)
            try destination.execute("PRAGMA journal_mode = DELETE")
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            try? FileManager.default.removeItem(atPath: temporary)
            throw BuckiaError.posix(code, operation: "backup", path: path)
        }
    }

    /// Runs `PRAGMA quick_check`; returns the problems found, empty when the database is sound.
    public func quickCheck() throws -> [String] {
        try query("PRAGMA quick_check") { $0.string(0) ?? "" }.filter { $0 != "ok" }
    }
}
