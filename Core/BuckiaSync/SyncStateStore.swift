import BuckiaCore
import BuckiaSQLite
import Foundation

/// What the last successful sync of one source/destination pair left: the baseline of every
/// path, in an SQLite database of its own.
///
/// It only ever costs speed to lose: a missing store means a first sync (compare, then
/// record), and a damaged one is moved aside (`<name>.corrupt-<unix time>`) and started afresh,
/// which ``wasReset`` reports. Changes are applied in one transaction, so a killed run leaves
/// the store as it was before or after, never between.
public final class SyncStateStore: @unchecked Sendable {
    /// The database file.
    public let url: URL
    /// Why the store started empty although a file was there (it was damaged or of an
    /// unknown version); nil when it opened as it was.
    public let wasReset: String?
    private let lock = NSLock()
    private let connection: SQLiteConnection

    /// The schema version this code reads and writes.
    static let version: Int64 = 1

    /// Where the store of a pair lives: `$XDG_STATE_HOME/buckia/sync` (else
    /// `~/.local/state/buckia/sync`), one file per pair, named by a hash of the two endpoints.
    public static func location(source: String, destination: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let base = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0, isDirectory: true) : nil }
            ?? URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory(), isDirectory: true).appendingPathComponent(".local/state")
        let name = Hashing.sha256Hex(Data("\(source)\n\(destination)".utf8)).prefix(32)
        return base.appendingPathComponent("buckia/sync/\(name).sqlite")
    }

    /// Opens the store at `url`, creating it (and its folder) when missing.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/permissionDenied`` or `io` when the folder or
    ///   file cannot be created or opened; damage is not an error (see ``wasReset``).
    public init(url: URL) throws {
        self.url = url
        try LocalFile.createDirectories(url.deletingLastPathComponent().path)
        var reset: String?
        var opened: SQLiteConnection
        do {
            opened = try Self.open(url)
        } catch let error as BuckiaError where error.code == .corrupt || error.code == .invalidConfiguration {
            reset = error.message
            try Self.moveAside(url)
            opened = try Self.open(url)
        }
        connection = opened
        wasReset = reset
    }

    /// Opens and checks the database: schema present, version known, quick check clean.
    private static func open(_ url: URL) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: url.path)
        let problems = try connection.quickCheck()
        guard problems.isEmpty else {
            throw BuckiaError(.corrupt, "The sync state store is damaged (\(problems.prefix(3).joined(separator: "; "))).", path: url.path)
        }
        let version = try connection.query("PRAGMA user_version") { $0.int64(0) }.first ?? 0
        switch version {
        case 0:
            try connection.transaction {
                try connection.execute("CREATE TABLE IF NOT EXISTS baseline (path TEXT PRIMARY KEY, entry BLOB NOT NULL) WITHOUT ROWID")
                try connection.execute("PRAGMA user_version = \(Self.version)")
            }
        case Self.version:
            break
        default:
            throw BuckiaError(.invalidConfiguration, "The sync state store has schema version \(version); this Buckia reads \(Self.version).", path: url.path)
        }
        return connection
    }

    private static func moveAside(_ url: URL) throws {
        let aside = url.appendingPathExtension("corrupt-\(Int(Date().timeIntervalSince1970))")
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let from = URL(fileURLWithPath: url.path + suffix)
            guard FileManager.default.fileExists(atPath: from.path) else { continue }
            try? FileManager.default.removeItem(atPath: aside.path + suffix)
            do {
                try FileManager.default.moveItem(at: from, to: URL(fileURLWithPath: aside.path + suffix))
            } catch {
                throw BuckiaError.wrapping(error, operation: "reset sync state", path: from.path)
            }
        }
    }

    /// Every path's baseline. An entry that cannot be decoded is left out, so that path is
    /// compared afresh.
    public func baseline() throws -> [String: SyncBaseline] {
        try lock.withLock {
            var result: [String: SyncBaseline] = [:]
            let decoder = JSONDecoder()
            try connection.forEachRow("SELECT path, entry FROM baseline") { row in
                if let path = row.string(0), let data = row.data(1), let entry = try? decoder.decode(SyncBaseline.self, from: data) {
                    result[path] = entry
                }
                return true
            }
            return result
        }
    }

    /// Records new baselines and forgets others (`nil`), all or nothing.
    public func apply(_ changes: [String: SyncBaseline?]) throws {
        let encoder = JSONEncoder()
        try lock.withLock {
            try connection.transaction {
                for (path, entry) in changes {
                    if let entry {
                        try connection.run(
                            "INSERT INTO baseline (path, entry) VALUES (?, ?) ON CONFLICT(path) DO UPDATE SET entry = excluded.entry",
                            [.text(path), .blob(try encoder.encode(entry))])
                    } else {
                        try connection.run("DELETE FROM baseline WHERE path = ?", [.text(path)])
                    }
                }
            }
        }
    }
}
