import BuckiaCore
import CSQLite
import Foundation

/// One connection to an SQLite database: the small Swift layer every SQLite user in Buckia
/// shares.
///
/// Statements are compiled once and cached by their SQL text; values bind by type; errors are
/// ``BuckiaCore/BuckiaError`` with the SQLite result code as cause. A corrupt or foreign file
/// fails with ``BuckiaCore/BuckiaError/Code/corrupt`` on open, before anything is written.
///
/// Not `Sendable`: an SQLite connection and its statements belong to one task at a time.
/// Own it from an actor (as the engines do), or open one connection per task.
///
/// ```swift
/// let db = try SQLiteConnection(path: "/tmp/app.sqlite")
/// try db.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB)")
/// try db.transaction {
///     try db.run("INSERT INTO kv VALUES (?, ?)", ["a", .blob(Data([1, 2]))])
/// }
/// let values = try db.query("SELECT value FROM kv") { $0.data(0) }
/// ```
public final class SQLiteConnection {
    package let handle: OpaquePointer
    /// The database file, or `:memory:`.
    public let path: String
    private var statements: [String: SQLiteStatement] = [:]
    /// Set by the commit hook ``trackCommits()`` installs; cleared by ``takeCommitted()``.
    private var committed = false
    /// The `data_version` ``othersCommitted()`` saw last.
    private var seenDataVersion: Int64?

    /// How to open the database.
    public enum OpenMode: Sendable {
        /// Read and write, creating the file if `create` and it is missing.
        case readWrite(create: Bool)
        /// Read only; writes fail.
        case readOnly
    }

    /// Opens (or creates) a database and checks it is one.
    ///
    /// - Parameters:
    ///   - busyTimeout: How long a statement waits for another connection's lock before
    ///     failing with ``BuckiaCore/BuckiaError/Code/transient``.
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` for a file that is not an SQLite
    ///   database, ``BuckiaCore/BuckiaError/Code/permissionDenied`` for one that cannot be opened.
    public init(path: String, mode: OpenMode = .readWrite(create: true), busyTimeout: Duration = .seconds(5)) throws {
        // A symbolic link planted as the database (or a dangling one) is refused instead of
        // followed, so a database is never created or written at a link's target. (Not
        // SQLITE_OPEN_NOFOLLOW: it refuses a link anywhere on the path, such as a home folder
        // reached through one.)
        var info = stat()
        if path != ":memory:", lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK {
            throw BuckiaError(
                .invalidPath, "The database file \(path) is a symbolic link; a database is opened only at its real path, never through a link. Remove the link.",
                operation: "open", path: path)
        }
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        switch mode {
        case .readWrite(let create): flags |= SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        var connection: OpaquePointer?
        let status = sqlite3_open_v2(path, &connection, flags, nil)
        guard status == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(connection)
            throw SQLiteConnection.error(status, extended: status, message: message, operation: "open", path: path)
        }
        self.handle = connection
        self.path = path
        sqlite3_extended_result_codes(connection, 1)
        let milliseconds = busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(connection, Int32(clamping: milliseconds))
        // On Apple platforms fsync leaves data in the drive's cache; these make SQLite's syncs
        // F_FULLFSYNC, which empties it. SQLite ignores them where there is no F_FULLFSYNC.
        try execute("PRAGMA fullfsync = ON; PRAGMA checkpoint_fullfsync = ON")
        // Reading the schema is the first moment SQLite looks at the file's header.
        try execute("SELECT count(*) FROM sqlite_schema")
    }

    /// A private database in memory, gone when the connection closes.
    public static func inMemory() throws -> SQLiteConnection {
        try SQLiteConnection(path: ":memory:")
    }

    /// Opens a private, read-only, in-memory copy of `bytes` (an SQLite database file's
    /// contents) hardened for a file from someone else, before SQLite reads its schema:
    ///
    /// - `SQLITE_DBCONFIG_DEFENSIVE` (no writes to the schema, no `writable_schema`),
    /// - `trusted_schema` off (no SQL function or virtual table runs from the schema),
    /// - triggers and views disabled, `cell_size_check` on (b-tree cells are bounds-checked as
    ///   they are read), no memory map.
    ///
    /// The file never touches the file system again: no `-wal` or `-journal` beside it is read,
    /// and the bytes checked are the bytes read.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` when SQLite cannot read it.
    public static func openUntrusted(_ bytes: Data, name: String) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: ":memory:")
        for (option, value) in [
            (SQLITE_DBCONFIG_DEFENSIVE, Int32(1)), (SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0), (SQLITE_DBCONFIG_ENABLE_TRIGGER, 0),
            (SQLITE_DBCONFIG_ENABLE_VIEW, 0),
        ] {
            let status = buckia_sqlite3_db_config_int(connection.handle, option, value, nil)
            guard status == SQLITE_OK else { throw connection.error(status, operation: "harden") }
        }
        try connection.execute("PRAGMA trusted_schema = OFF; PRAGMA cell_size_check = ON; PRAGMA mmap_size = 0")
        guard let buffer = sqlite3_malloc64(sqlite3_uint64(max(bytes.count, 1)))?.assumingMemoryBound(to: UInt8.self) else {
            throw BuckiaError(.io, "Out of memory reading the database \(name).", operation: "open", path: name)
        }
        bytes.copyBytes(to: buffer, count: bytes.count)
        // On failure SQLite frees the buffer itself (FREEONCLOSE).
        let status = sqlite3_deserialize(
            connection.handle, "main", buffer, Int64(bytes.count), Int64(bytes.count),
            UInt32(SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY))
        guard status == SQLITE_OK else { throw connection.error(status, operation: "open") }
        try connection.execute("SELECT count(*) FROM sqlite_schema")
        return connection
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows (schema, pragmas).
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard status == SQLITE_OK else { throw error(status, operation: "execute", sql: sql) }
    }

    /// The cached compiled statement for `sql`, or a fresh one if the cached one is in use.
    public func prepare(_ sql: String) throws -> SQLiteStatement {
        if let cached = statements[sql], !cached.inUse { return cached }
        let statement = try SQLiteStatement(connection: self, sql: sql)
        if statements[sql] == nil { statements[sql] = statement }
        return statement
    }

    /// Runs a statement that returns no rows, with bound values.
    public func run(_ sql: String, _ values: [SQLiteValue] = []) throws {
        let statement = try prepare(sql)
        try statement.bind(values)
        defer { statement.reset() }
        while try statement.step() {}
    }

    /// Runs a query and maps every row.
    public func query<Row>(_ sql: String, _ values: [SQLiteValue] = [], _ transform: (SQLiteRow) throws -> Row) throws -> [Row] {
        var rows: [Row] = []
        try forEachRow(sql, values) { row in
            rows.append(try transform(row))
            return true
        }
        return rows
    }

    /// Streams a query's rows to `body` one at a time; return false to stop early.
    public func forEachRow(_ sql: String, _ values: [SQLiteValue] = [], _ body: (SQLiteRow) throws -> Bool) throws {
        let statement = try prepare(sql)
        statement.inUse = true
        defer {
            statement.inUse = false
            statement.reset()
        }
        try statement.bind(values)
        while try statement.step() {
            if try !body(statement.row) { return }
        }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Whether a transaction is open.
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    // MARK: Errors

    func error(_ status: Int32, operation: String, sql: String? = nil) -> BuckiaError {
        SQLiteConnection.error(
            status, extended: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)),
            operation: sql.map { "\(operation): \($0.prefix(200))" } ?? operation, path: path)
    }

    static func error(_ status: Int32, extended: Int32, message: String, operation: String, path: String) -> BuckiaError {
        let cause = SQLiteResultCode(code: status & 0xff, extendedCode: extended, message: message)
        switch status & 0xff {
        case SQLITE_NOTADB, SQLITE_CORRUPT:
            return BuckiaError(.corrupt, "The file is not a usable SQLite database (\(message)); it was left untouched.", operation: operation, path: path, cause: cause)
        case SQLITE_BUSY, SQLITE_LOCKED:
            return BuckiaError(.transient, "The database is locked by another connection; retry, or raise the busy timeout.", operation: operation, path: path, cause: cause)
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH:
            return BuckiaError(.permissionDenied, "The database cannot be written: \(message.withoutTerminalPeriod).", operation: operation, path: path, cause: cause)
        case SQLITE_CANTOPEN:
            return BuckiaError(.permissionDenied, "The database file cannot be opened; check that its folder exists and is writable.", operation: operation, path: path, cause: cause)
        case SQLITE_FULL:
            return BuckiaError(.io, "The disk is full; free space and retry.", operation: operation, path: path, cause: cause)
        case SQLITE_TOOBIG:
            return BuckiaError(.invalidPath, "A value is larger than SQLite allows.", operation: operation, path: path, cause: cause)
        case SQLITE_CONSTRAINT:
            return BuckiaError(.conditionNotMatch, "A database constraint failed: \(message.withoutTerminalPeriod).", operation: operation, path: path, cause: cause)
        case SQLITE_INTERRUPT:
            return BuckiaError(.cancelled, "The database operation was interrupted.", operation: operation, path: path, cause: cause)
        default:
            return BuckiaError(.io, "SQLite failed to \(operation): \(message.withoutTerminalPeriod).", operation: operation, path: path, cause: cause)
        }
    }
}

extension SQLiteConnection {
    /// Starts noting this connection's commits (SQLite's commit hook), for
    /// ``takeCommitted()``: how a live query learns that a call changed something.
    public func trackCommits() {
        // The hook's context is this connection, which outlives its handle and so the hook.
        sqlite3_commit_hook(
            handle,
            { context in
                if let context { Unmanaged<SQLiteConnection>.fromOpaque(context).takeUnretainedValue().committed = true }
                return 0  // let the commit go ahead
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Whether a transaction of this connection committed since the last call (always false
    /// before ``trackCommits()``).
    public func takeCommitted() -> Bool {
        defer { committed = false }
        return committed
    }

    /// Whether another connection has committed to the file since the last call (the first
    /// call remembers and says false): SQLite's `PRAGMA data_version`, which changes when
    /// another connection (another process, or another connection of this one) commits, and
    /// never for this connection's own commits.
    ///
    /// - Throws: What SQLite reports when it cannot read the number.
    public func othersCommitted() throws -> Bool {
        let version = try query("PRAGMA data_version") { $0.int64(0) }.first ?? 0
        defer { seenDataVersion = version }
        return seenDataVersion.map { $0 != version } ?? false
    }
}
