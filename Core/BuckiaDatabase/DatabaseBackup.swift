import BuckiaCore
import BuckiaSQLite
import Foundation

/// How a backup copies a live database. Both give a consistent snapshot while other
/// connections keep writing (in WAL mode they are not even blocked): each reads in one read
/// transaction. Docs/Database.md has the measurements behind the default.
public enum BackupMethod: String, Sendable, CaseIterable, Codable {
    /// SQLite's online backup API, a page-for-page copy, in 16 MiB steps inside one read
    /// transaction: one snapshot that other connections' writes never restart (a stepped
    /// backup without it, as the `sqlite3` shell's `.backup`, starts over on every write and
    /// under a steady writer does not finish), each step flushed to the device so an app's
    /// commit never waits behind a gigabyte of dirty pages.
    case onlineBackup
    /// `VACUUM INTO`: a compacted copy, rebuilt row by row.
    case vacuumInto
}

/// A backup that was written.
public struct BackupResult: Hashable, Sendable {
    /// The backup file.
    public var url: URL
    /// Its size in bytes.
    public var size: Int64
    /// How it was copied.
    public var method: BackupMethod
}

package enum DatabaseBackup {
    /// Pages copied between flushes: 16 MiB at 4 KiB pages.
    static let pagesPerStep: Int32 = 4096

    /// Copies the database at `source` to `destination` consistently: into a temporary beside
    /// it, `quick_check`ed, in rollback-journal mode (one self-contained file), synced, renamed
    /// over the old backup, and the folder synced. A failure leaves the old backup as it was.
    ///
    /// - Parameter paced: Whether an online backup copies in steps inside one snapshot, flushing
    ///   each step (false: one step, flushed at the end). Kept selectable for the benchmark.
    @discardableResult
    package static func write(from source: URL, to destination: URL, method: BackupMethod, paced: Bool = true) throws -> BackupResult {
        try DatabaseFile.check(source, as: "database", for: "backup", content: .nonEmptyDatabase)
        try DatabaseFile.checkDistinct(source, destination, for: "backup")
        let folder = destination.deletingLastPathComponent()
        try LocalFile.checkReplaceable(destination.path)
        // A file there that is not a database is the user's, not an old backup: never replaced.
        try DatabaseFile.checkIfPresent(destination, as: "backup destination", for: "backup")
        return try withTemporary(in: folder) { temporary in
            try copy(source, to: temporary, method: method, paced: paced)
            try check(temporary, operation: "backup")
            let file = try LocalFile.openForReading(temporary)
            defer { file.closeAfterReading() }
            try paced ? file.syncInSteps() : file.sync()
            let size = try file.status().size
            guard rename(temporary.path, destination.path) == 0 else { throw BuckiaError.posix(errno, operation: "backup", path: destination.path) }
            try DirectoryHandle(path: folder.path).sync()
            return BackupResult(url: destination, size: size, method: method)
        }
    }

    /// Runs `body` with the name of a new temporary in `folder` (made if missing), removed
    /// afterwards unless `body` renamed it away.
    static func withTemporary<Result>(in folder: URL, _ body: (URL) throws -> Result) throws -> Result {
        try LocalFile.createDirectories(folder.path)
        let temporary = folder.appendingPathComponent(Temporaries.makeName(), isDirectory: false)
        try Temporaries.register(temporary.path)
        defer {
            unlink(temporary.path)
            Temporaries.unregister(temporary.path)
        }
        return try body(temporary)
    }

    /// Copies the database `source` into the new file `temporary`.
    static func copy(_ source: URL, to temporary: URL, method: BackupMethod, paced: Bool) throws {
        do {
            // A backup may wait longer than an app's query for a busy writer to let go.
            let database = try SQLiteConnection(path: source.path, mode: .readWrite(create: false), busyTimeout: .seconds(30))
            switch method {
            case .onlineBackup:
                let copy = try SQLiteConnection(path: temporary.path)
                // A private file until the rename: no journal, and its bytes flushed every step,
                // so the copy never leaves more than a step's worth of dirty pages for the
                // kernel to write at once (on ext4, an app's next fsync would wait behind them:
                // a commit stalled for most of a second per GiB, Docs/Benchmarks.md).
                try copy.setJournalMode(.off)
                try copy.setSynchronous(.off)
                let flusher = try LocalFile.openForReading(temporary)
                defer { flusher.closeAfterReading() }
                try database.backup(to: copy, pagesPerStep: paced ? pagesPerStep : -1, holdingSnapshot: true) { try flusher.syncData() }
                try copy.setJournalMode(.delete)
            case .vacuumInto:
                try database.run("VACUUM INTO ?", [.text(temporary.path)])
                let copy = try SQLiteConnection(path: temporary.path, mode: .readWrite(create: false))
                try copy.setJournalMode(.delete)
            }
        }
    }

    /// Refuses a database that fails `quick_check`.
    static func check(_ url: URL, operation: String) throws {
        let copy = try SQLiteConnection(path: url.path, mode: .readOnly)
        let problems = try copy.quickCheck()
        guard problems.isEmpty else {
            throw BuckiaError(
                .corrupt, "\(operation == "restore" ? "The backup \(url.path.debugDescription)" : "The database copy") failed SQLite's quick_check (\(problems.prefix(3).joined(separator: "; "))); nothing was replaced.",
                operation: operation, path: url.path)
        }
    }

    /// Puts the backup at `backup` back as the database at `database`, atomically: into an
    /// existing database with SQLite's backup API in one write transaction (other connections
    /// see the old content or the restored one, and a WAL beside it stays consistent); where
    /// there is no database yet, as a copy renamed into place. Before anything changes, a
    /// backup is refused that is not a regular file, not an SQLite database, empty (a
    /// zero-length file or one with no tables: restored, it would leave none), or fails
    /// `quick_check`; so is a database that is the backup itself, or is not a database.
    package static func restore(from backup: URL, to database: URL) throws {
        try DatabaseFile.check(backup, as: "backup", for: "restore", content: .nonEmptyDatabase)
        try DatabaseFile.checkDistinct(backup, database, for: "restore")
        let exists = try DatabaseFile.checkIfPresent(database, as: "database", for: "restore") != nil
        try check(backup, operation: "restore")
        let source = try SQLiteConnection(path: backup.path, mode: .readOnly)
        let objects = try source.query("SELECT count(*) FROM sqlite_schema") { $0.int64(0) }.first ?? 0
        guard objects > 0 else {
            throw BuckiaError(
                .corrupt, "The backup \(backup.path.debugDescription) holds no tables; restoring it would empty \(database.path.debugDescription), so nothing was changed.",
                operation: "restore", path: backup.path)
        }
        if exists {
            let target = try SQLiteConnection(path: database.path, mode: .readWrite(create: false))
            try source.backup(to: target, pagesPerStep: -1)
            return
        }
        let folder = database.deletingLastPathComponent()
        try withTemporary(in: folder) { temporary in
            do {
                let copy = try SQLiteConnection(path: temporary.path)
                try source.backup(to: copy, pagesPerStep: -1)
            }
            let file = try LocalFile.openForReading(temporary)
            defer { file.closeAfterReading() }
            try file.sync()
            guard link(temporary.path, database.path) == 0 else { throw BuckiaError.posix(errno, operation: "restore", path: database.path) }
            try DirectoryHandle(path: folder.path).sync()
        }
    }
}
