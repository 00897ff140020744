import BuckiaCore
import Foundation

/// One SQLite connection that many tasks share, one at a time: the shape of GRDB's
/// `DatabaseQueue`, and what every SQLite user in Buckia holds instead of a connection and a
/// lock of its own.
///
/// A ``SQLiteConnection`` is not `Sendable`; this is. The connection is reached only inside a
/// closure that holds it alone, and a closure must not keep it (GRDB's rule for its
/// `Database`). ``withConnection(_:)`` runs on the calling thread, for a statement or two, where a hop to
/// another thread costs more than the work; ``run(_:_:)``, ``read(_:_:)`` and ``write(_:_:)``
/// run on a ``BuckiaCore/BlockingPool`` (a commit's `fsync` never holds a thread of the
/// cooperative pool), ``read(_:_:)`` inside a `DEFERRED` transaction (one snapshot) and
/// ``write(_:_:)`` inside an `IMMEDIATE` one.
///
/// ```swift
/// let database = try SQLiteDatabase(path: "/tmp/app.sqlite")
/// try database.withConnection { try $0.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB)") }
/// try await database.write("save a value") { try $0.run("INSERT OR REPLACE INTO kv VALUES (?, ?)", ["a", .blob(Data([1, 2]))]) }
/// let values = try await database.read("list values") { try $0.query("SELECT value FROM kv") { $0.data(0) } }
/// ```
///
/// ``othersCommitted()`` tells whether another connection (another process, or another
/// database opened on the same file) has committed since it was last asked: SQLite's
/// `PRAGMA data_version`, which a connection's own commits leave alone.
public final class SQLiteDatabase: @unchecked Sendable {  // the connection, only under `lock` and inside a closure
    private let lock = NSLock()
    private let connection: SQLiteConnection
    /// Where ``run(_:_:)``, ``read(_:_:)`` and ``write(_:_:)`` run; nil for the process's pool.
    private let pool: BlockingPool?

    /// The database file, or `:memory:`.
    public let path: String

    /// Opens (or creates) the database at `path`, as ``SQLiteConnection/init(path:mode:busyTimeout:)``.
    ///
    /// - Parameter pool: Where ``run(_:_:)``, ``read(_:_:)`` and ``write(_:_:)`` run: a provider's or an
    ///   application's pool, or (nil) ``BuckiaCore/SharedResources/process``'s.
    public convenience init(
        path: String, mode: SQLiteConnection.OpenMode = .readWrite(create: true), busyTimeout: Duration = .seconds(5), pool: BlockingPool? = nil
    ) throws {
        self.init(try SQLiteConnection(path: path, mode: mode, busyTimeout: busyTimeout), pool: pool)
    }

    /// Takes `connection` over: from now on it is reached only through this database.
    public init(_ connection: sending SQLiteConnection, pool: BlockingPool? = nil) {
        path = connection.path
        self.connection = connection
        self.pool = pool
    }

    /// Runs `body` with the connection on the calling thread, once no one else uses it.
    /// `body` must not keep the connection.
    public func withConnection<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(connection)
    }

    /// Runs `body` with the connection on the calling thread if no one uses it now; nil
    /// otherwise. `body` must not keep the connection.
    public func withConnectionIfAvailable<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        return try body(connection)
    }

    /// Runs `body` with the connection on the pool's threads, outside any transaction: for a
    /// body that makes its own (the catalog commits a long batch in chunks).
    ///
    /// - Parameter operation: What it does, for the error when it is cancelled before it runs.
    public func run<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await BlockingWork.run(operation, on: pool) { [self] in try withConnection(body) }
    }

    /// Runs `body` with the connection on the pool's threads, in a `DEFERRED` transaction: every
    /// query in it sees the same commit, whatever other connections commit meanwhile.
    ///
    /// - Parameter operation: What it does, for the error when it is cancelled before it runs.
    public func read<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await run(operation) { connection in try connection.transaction(.deferred) { try body(connection) } }
    }

    /// Runs `body` with the connection on the pool's threads, in an `IMMEDIATE` transaction:
    /// committed when it returns, rolled back when it throws.
    public func write<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await run(operation) { connection in try connection.transaction(.immediate) { try body(connection) } }
    }

    /// Whether another connection has committed to the file since the last call: the
    /// connection's ``SQLiteConnection/othersCommitted()``.
    public func othersCommitted() throws -> Bool {
        try withConnection { try $0.othersCommitted() }
    }
}

/// A database in WAL mode with one connection that writes and read-only connections beside
/// it: the shape of GRDB's `DatabasePool`. Reads run in parallel with each other and with a
/// write, each seeing the last commit; a read takes the writer when it is free (its page cache
/// is warm), else an idle reader, else a new one.
public final class SQLiteDatabasePool: Sendable {
    private let primary: SQLiteDatabase
    private let idle = Locked<[SQLiteDatabase]>([])
    private let maximumIdleReaders: Int
    private let openReader: @Sendable () throws -> SQLiteConnection

    /// A pool whose writes go through `primary`.
    ///
    /// - Parameters:
    ///   - maximumIdleReaders: Readers kept open between reads; more are opened when reads
    ///     crowd, and closed after.
    ///   - pool: Where ``write(_:_:)-(String,_)`` runs; nil for the process's pool.
    ///   - openReader: Opens one more read-only connection to the same file.
    public init(
        primary: sending SQLiteConnection, maximumIdleReaders: Int = 8, pool: BlockingPool? = nil,
        openReader: @escaping @Sendable () throws -> SQLiteConnection
    ) {
        self.primary = SQLiteDatabase(primary, pool: pool)
        self.maximumIdleReaders = maximumIdleReaders
        self.openReader = openReader
    }

    /// Runs `body` on the writing connection, on the calling thread, once no one else uses it.
    /// `body` makes its own transactions.
    public func write<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        try primary.withConnection(body)
    }

    /// Runs `body` on the writing connection, on the pool's threads (a commit's `fsync` never
    /// holds a thread of the cooperative pool), once no one else uses it. `body` makes its own
    /// transactions.
    ///
    /// - Parameter operation: What it does, for the error when it is cancelled before it runs.
    public func write<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await primary.run(operation, body)
    }

    /// Runs `body` on the writing connection if it is free, else on a reader.
    ///
    /// - Throws: What `body` throws; SQLite's error when a reader cannot be opened.
    public func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        if let result = try primary.withConnectionIfAvailable(body) { return result }
        let reader = try idle.withLock { $0.popLast() } ?? SQLiteDatabase(try openReader())
        defer {
            idle.withLock { idle in
                if idle.count < maximumIdleReaders { idle.append(reader) }
            }
        }
        return try reader.withConnection(body)
    }

    /// Closes the idle readers. Call it first when the pool goes away, so that the writer is
    /// the last connection to close and checkpoints the WAL into the database; a read-only
    /// connection closing last would leave the WAL for the next open to replay.
    public func closeReaders() {
        idle.withLock { $0.removeAll() }
    }
}
