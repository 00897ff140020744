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
///
/// Damage is found where SQLite meets it: on opening (a file that is not a database, a
/// missing schema) and on any later read or write (a damaged page), never by a whole-file
/// check first. A sync reads every row it needs anyway, so `PRAGMA quick_check` on opening
/// read the store twice, before either listing could start: 40 ms of a 0.5 s no-op resync of
/// 100,000 files, all of it on the critical path. Damage met later resets the store then:
/// what was read before it stands (SQLite checked each page it returned), the rest of the
/// paths compare afresh, and the write that met it goes to the new store.
public final class SyncStateStore: Sendable {
    /// The database file.
    public let url: URL
    private let readOnly: Bool
    /// Held for each call from start to end, so calls run one at a time.
    private let state: Locked<State>

    private struct State: Sendable {
        /// Replaced when damage is met (``SyncStateStore/access(_:_:_:)``).
        var database: SQLiteDatabase
        var reset: String?
        /// The lock file's descriptor, held while the store is open for writing (-1 once closed).
        var lockFile: Int32?
    }

    /// The schema version this code reads and writes. Version 1 (a JSON blob per path) is
    /// replaced by an empty version 2 store: its baselines cost only a comparison to rebuild.
    static let version: Int64 = 2

    /// Where the store of a pair lives: `$XDG_STATE_HOME/buckia/sync` (else
    /// `~/.local/state/buckia/sync`), one file per pair, named by a hash of the two endpoints.
    public static func location(source: String, destination: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let name = Hashing.sha256Hex(Data("\(source)\n\(destination)".utf8)).prefix(32)
        return folder(environment: environment).appendingPathComponent("\(name).sqlite")
    }

    /// `$XDG_STATE_HOME/buckia/sync`, else `~/.local/state/buckia/sync`: where state stores
    /// and sync locks live.
    public static func folder(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let base = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0, isDirectory: true) : nil }
            ?? URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory(), isDirectory: true).appendingPathComponent(".local/state")
        return base.appendingPathComponent("buckia/sync", isDirectory: true)
    }

    /// Opens the store at `url`, creating it (and its folder) when missing, and holds it for
    /// this process until the store is released: two syncs of one pair at once would each
    /// record what they saw, the slower over the newer.
    ///
    /// - Parameter readOnly: Open for reading only (a dry run): nothing is created, migrated
    ///   or moved aside; a store that cannot be read as it is opens empty (see ``wasReset``).
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a store written by a
    ///   newer Buckia (it is left as it is: upgrade, or remove it to start afresh);
    ///   ``BuckiaCore/BuckiaError/Code/transient`` while another process syncs the same pair;
    ///   `permissionDenied` or `io` when the folder or file cannot be created or opened.
    ///   Damage is not an error (see ``wasReset``).
    public init(url: URL, readOnly: Bool = false) throws {
        self.url = url
        self.readOnly = readOnly
        if readOnly {
            do {
                state = Locked(State(database: SQLiteDatabase(try Self.open(url, readOnly: true)), reset: nil, lockFile: nil))
            } catch let error as BuckiaError where error.code == .corrupt || error.code == .invalidConfiguration || error.code == .notFound {
                state = Locked(State(database: SQLiteDatabase(try Self.empty()), reset: error.message, lockFile: nil))
            }
            return
        }
        try LocalFile.createDirectories(url.deletingLastPathComponent().path)
        let lockFile = try Self.lock(url)
        var reset: String?
        var opened: SQLiteConnection
        do {
            do {
                opened = try Self.open(url, readOnly: false)
            } catch let error as BuckiaError where error.code == .corrupt {
                reset = error.message
                try Self.moveAside(url)
                opened = try Self.open(url, readOnly: false)
            }
        } catch {
            systemClose(lockFile)
            throw error
        }
        state = Locked(State(database: SQLiteDatabase(opened), reset: reset, lockFile: lockFile))
    }

    /// Why the store started afresh although a file was there (it was damaged, or of an
    /// unknown version); nil while it holds what it was opened with. Damage met after opening
    /// sets it then, so a run reads it when it ends.
    public var wasReset: String? { state.withLock { $0.reset } }

    /// An empty store in memory: what a read-only store that cannot be read stands in for.
    private static func empty() throws -> SQLiteConnection {
        let connection = try SQLiteConnection.inMemory()
        try createSchema(connection)
        return connection
    }

    /// Runs `body` on the connection, under the lock. When SQLite finds the file damaged, the
    /// store is moved aside and started afresh (a read-only one continues empty in memory,
    /// leaving the file as it is), and `body` runs once more on the new store: a read then
    /// finds nothing, a write is recorded there. Call with `state`'s lock held.
    private func access<T>(_ state: inout State, _ operation: String, _ body: (SQLiteConnection) throws -> T) throws -> T {
        do {
            return try state.database.withConnection(body)
        } catch let error as BuckiaError where error.code == .corrupt {
            let replacement: SQLiteConnection
            if readOnly {
                replacement = try Self.empty()
            } else {
                try Self.moveAside(url)
                replacement = try Self.open(url, readOnly: false)
            }
            state.database = SQLiteDatabase(replacement)
            state.reset = "\(error.message) (met while \(operation))"
            return try state.database.withConnection(body)
        }
    }

    deinit {
        state.withLock { state in
            if let lockFile = state.lockFile, lockFile >= 0 { systemClose(lockFile) }
        }
    }

    /// Releases the pair for the next sync, now rather than whenever the last reference goes
    /// (a finished run's tasks may hold one a moment longer). The store cannot be written after.
    public func close() {
        state.withLock { state in
            if let file = state.lockFile, file >= 0 { systemClose(file) }
            state.lockFile = -1
        }
    }

    /// Takes the pair's lock file (`<store>.lock`), or fails when another process holds it.
    private static func lock(_ url: URL) throws -> Int32 {
        try SyncLocks.take(url.path + ".lock", what: "Another sync of the same two places is running")
    }

    /// Opens and checks the database: schema present, version known, quick check clean.
    private static func open(_ url: URL, readOnly: Bool) throws -> SQLiteConnection {
        if readOnly && !FileManager.default.fileExists(atPath: url.path) {
            throw BuckiaError(.notFound, "No sync state store yet.", path: url.path)
        }
        let connection = try SQLiteConnection(path: url.path, mode: readOnly ? .readOnly : .readWrite(create: true))
        let version = try connection.query("PRAGMA user_version") { $0.int64(0) }.first ?? 0
        switch version {
        case Self.version:
            break
        case 0, 1:
            // Empty, or version 1 (a JSON blob per path): its baselines only cost a comparison
            // to rebuild.
            guard !readOnly else { throw BuckiaError(.corrupt, "The sync state store is of an older version.", path: url.path) }
            try createSchema(connection)
        default:
            throw BuckiaError(
                .invalidConfiguration,
                "The sync state store was written by a newer Buckia (schema \(version); this one reads \(Self.version)), so it is left as it is. Use that Buckia, or remove the file to compare afresh.",
                path: url.path)
        }
        return connection
    }

    private static func createSchema(_ connection: SQLiteConnection) throws {
        try connection.transaction {
            try connection.execute("DROP TABLE IF EXISTS baseline")
            try connection.execute(
                """
                CREATE TABLE baseline (
                    path TEXT PRIMARY KEY,
                    local_size INTEGER NOT NULL, local_modified REAL, local_etag TEXT, local_checksums TEXT NOT NULL,
                    remote_size INTEGER NOT NULL, remote_modified REAL, remote_etag TEXT, remote_checksums TEXT NOT NULL
                ) WITHOUT ROWID
                """)
            try connection.execute("PRAGMA user_version = \(Self.version)")
        }
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

    /// Every path's baseline. A row that is not a valid key or not a valid entry is left
    /// out, so that path is compared afresh.
    public func baseline() throws -> [ObjectKey: SyncBaseline] {
        var result: [ObjectKey: SyncBaseline] = [:]
        try forEachBaseline { result[$0] = $1 }
        return result
    }

    /// Streams every path's baseline in key order to `body`, holding none of them: what a
    /// sync of many files reads without keeping. The store is locked meanwhile; `body` must
    /// not call back into it.
    public func forEachBaseline(_ body: (ObjectKey, SyncBaseline) throws -> Void) throws {
        try state.withLock { state in
            // Rows given to `body` before damage was met stand; the rest are forgotten.
            try access(&state, "reading baselines") { connection in
                try connection.forEachRow("SELECT \(Self.columns) FROM baseline ORDER BY path") { row in
                    var page = BaselinePage()
                    page.read(row)
                    if !page.rows.isEmpty { try body(page.key(0), page.baseline(0)) }
                    return true
                }
            }
        }
    }

    /// Up to `limit` baselines in key order, of the paths after `after` (all when nil): a
    /// sync reads the store a page at a time, so it holds neither the whole store nor its
    /// lock while it waits on the listings. SQLite's `BINARY` order of `path` is byte order,
    /// the order of ``BuckiaCore/ObjectKey``.
    ///
    /// - Returns: The page, and the stored path of the last row read, nil when there was
    ///   none (the end): the next page's `after`, so a row that cannot be read is passed over.
    public func baselines(after: String?, limit: Int) throws -> (page: [(path: ObjectKey, baseline: SyncBaseline)], last: String?) {
        let page = try baselinePage(after: after, limit: limit)
        return (page.rows.indices.map { (page.key($0), page.baseline($0)) }, page.last)
    }

    /// The same page packed, as a sync reads it (``BaselinePage``).
    package func baselinePage(after: String?, limit: Int) throws -> BaselinePage {
        var page = BaselinePage()
        page.rows.reserveCapacity(limit)
        var lastRaw: [UInt8]?
        try state.withLock { state in
            // Two statements, not `?1 IS NULL OR path > ?1`, which would scan the table a page.
            let (sql, values): (String, [SQLiteValue]) =
                if let after {
                    ("SELECT \(Self.columns) FROM baseline WHERE path > ? ORDER BY path LIMIT ?", [.text(after), .integer(Int64(limit))])
                } else {
                    ("SELECT \(Self.columns) FROM baseline WHERE path IS NOT NULL ORDER BY path LIMIT ?", [.integer(Int64(limit))])
                }
            // Damage ends the paging: the page so far stands, and a fresh store has no more.
            try access(&state, "reading baselines") { connection in
                try connection.forEachRow(sql, values) { row in
                    if !row.isNull(0) {
                        // One buffer, written over for each row: only the last row's is used.
                        if lastRaw == nil { lastRaw = [] }
                        lastRaw?.removeAll(keepingCapacity: true)
                        lastRaw?.append(contentsOf: row.unsafeBytes(0))
                    }
                    page.read(row)
                    return true
                }
            }
        }
        page.last = lastRaw.map { String(decoding: $0, as: UTF8.self) }
        return page
    }

    private static let columns =
        "path, local_size, local_modified, local_etag, local_checksums, remote_size, remote_modified, remote_etag, remote_checksums"

    /// How many paths have a baseline.
    public func count() throws -> Int {
        try state.withLock { state in
            try access(&state, "counting baselines") { try $0.query("SELECT count(*) FROM baseline") { Int($0.int64(0)) }.first ?? 0 }
        }
    }

    /// Records new baselines and forgets others (`nil`), all or nothing.
    public func apply(_ changes: [ObjectKey: SyncBaseline?]) throws {
        try apply(changes.map { ($0.key, $0.value) })
    }

    /// Records new baselines and forgets others (`nil`), all or nothing, in order.
    public func apply(_ changes: [(ObjectKey, SyncBaseline?)]) throws {
        guard !changes.isEmpty else { return }
        try state.withLock { state in
            guard state.lockFile != -1 else {
                throw BuckiaError(.io, "The sync state store was closed; open it again to record.", operation: "record sync state", path: url.path)
            }
            // A write that meets damage is made again on the fresh store.
            try access(&state, "recording baselines") { connection in
                try connection.transaction {
                    // Up to 64 rows an INSERT, each statement found once a batch, and one array of
                    // values refilled: a statement a row, looked up by its SQL text and bound from
                    // three new arrays, cost 22,000 instructions a path, a sixth of a first sync's.
                    // Consecutive records go together; a forget ends the group, so the changes
                    // still apply in order (a later row for a path replaces an earlier one).
                    var values: [SQLiteValue] = []
                    values.reserveCapacity(9 * Self.rowsPerInsert)
                    func insertPending() throws {
                        guard !values.isEmpty else { return }
                        let rows = values.count / 9
                        let insert = try connection.prepare(rows == Self.rowsPerInsert ? Self.insertSQL : Self.insertSQL(rows: rows))
                        try insert.bind(values)
                        try insert.run()
                        values.removeAll(keepingCapacity: true)
                    }
                    for (path, entry) in changes {
                        if let entry {
                            values.append(.text(path.rawValue))
                            Self.append(entry.local, to: &values)
                            Self.append(entry.remote, to: &values)
                            if values.count == 9 * Self.rowsPerInsert { try insertPending() }
                        } else {
                            try insertPending()
                            let delete = try connection.prepare(Self.deleteSQL)
                            try delete.bind([.text(path.rawValue)])
                            try delete.run()
                        }
                    }
                    try insertPending()
                }
            }
        }
    }

    /// Rows a full INSERT of ``apply(_:)`` writes: 576 parameters, well under SQLite's limit.
    private static let rowsPerInsert = 64
    private static let insertSQL = insertSQL(rows: rowsPerInsert)

    /// An INSERT of `rows` rows.
    private static func insertSQL(rows: Int) -> String {
        """
        INSERT OR REPLACE INTO baseline (path, local_size, local_modified, local_etag, local_checksums,
            remote_size, remote_modified, remote_etag, remote_checksums) VALUES
        """ + Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
    }

    private static let deleteSQL = "DELETE FROM baseline WHERE path = ?"

    /// Appends the four columns of one side's entry.
    private static func append(_ entry: SyncEntry, to values: inout [SQLiteValue]) {
        let checksums = entry.checksums.isEmpty ? "" : entry.checksums.sorted { $0.key < $1.key }.map { "\($0.key.rawValue)=\($0.value)" }.joined(separator: ",")
        values.append(.integer(entry.size))
        values.append(entry.modified.map { .real($0.timeIntervalSince1970) } ?? .null)
        values.append(entry.etag.map(SQLiteValue.text) ?? .null)
        values.append(.text(checksums))
    }
}

/// A page of baselines as a sync reads it: every path and entity tag in one byte buffer, so
/// a row costs no allocation until the merge keeps it (a changed path). Read as strings, a
/// row made a path, two entity tags and a validated key: 6,000 instructions, a sixth of a
/// no-op resync of a local tree.
///
/// A row no valid baseline can be read from (a key that is not valid, a missing size, a
/// checksum list that does not parse) is left out: it costs that path a fresh comparison,
/// nothing more.
package struct BaselinePage: Sendable {
    /// One side's recorded entry.
    package struct Side: Sendable {
        package var size: Int64
        package var modified: Date?
        package var etag: Range<Int>?
        /// Index in ``BaselinePage/checksums``; -1 for none.
        package var checksums: Int
    }

    /// One path's record.
    package struct Row: Sendable {
        package var path: Range<Int>
        package var local: Side
        package var remote: Side
    }

    package var bytes: [UInt8] = []
    package var rows: [Row] = []
    package var checksums: [[ChecksumAlgorithm: String]] = []
    /// The stored path of the last row read (readable or not), nil when there was none.
    package var last: String?

    /// Row `index`'s path as a key.
    package func key(_ index: Int) -> ObjectKey {
        ObjectKey.validated(relative: String(decoding: bytes[rows[index].path], as: UTF8.self))
    }

    /// Row `index`'s baseline.
    package func baseline(_ index: Int) -> SyncBaseline {
        let row = rows[index]
        var local = entry(row.local)
        var remote = entry(row.remote)
        // Both sides held the same bytes when recorded: a checksum of either is both's.
        if !remote.checksums.isEmpty { local.checksums.merge(remote.checksums) { mine, _ in mine } }
        if !local.checksums.isEmpty { remote.checksums.merge(local.checksums) { mine, _ in mine } }
        return SyncBaseline(local: local, remote: remote)
    }

    /// One side's entry as recorded, without the other side's checksums.
    package func entry(_ side: Side) -> SyncEntry {
        SyncEntry(
            size: side.size, modified: side.modified, checksums: side.checksums >= 0 ? checksums[side.checksums] : [:],
            etag: side.etag.map { String(decoding: bytes[$0], as: UTF8.self) })
    }

    /// Reads one row of ``SyncStateStore``'s columns, or leaves it out.
    mutating func read(_ row: SQLiteRow) {
        let mark = (bytes: bytes.count, checksums: checksums.count)
        guard !row.isNull(0), let path = readPath(row), let local = readSide(row, from: 1), let remote = readSide(row, from: 5) else {
            bytes.removeSubrange(mark.bytes...)
            checksums.removeSubrange(mark.checksums...)
            return
        }
        rows.append(Row(path: path, local: local, remote: remote))
    }

    /// Appends column `column`'s text to ``bytes`` as UTF-8 (text that is not is read as
    /// Swift's `String` repairs it) and returns where it lies.
    private mutating func appendText(_ row: SQLiteRow, _ column: Int) -> Range<Int> {
        let start = bytes.count
        let raw = row.unsafeBytes(column)
        if raw.allSatisfy({ $0 < 0x80 }) {
            bytes.append(contentsOf: raw)
        } else {
            bytes.append(contentsOf: String(decoding: raw, as: UTF8.self).utf8)
        }
        return start..<bytes.count
    }

    /// The row's path, appended to ``bytes``; nil when it is not a valid key.
    private mutating func readPath(_ row: SQLiteRow) -> Range<Int>? {
        let path = appendText(row, 0)
        let valid = bytes.withUnsafeBufferPointer { ObjectKey.isValid(UnsafeBufferPointer(rebasing: $0[path])) }
        return valid ? path : nil
    }

    private mutating func readSide(_ row: SQLiteRow, from column: Int) -> Side? {
        let size = row.int64(column)
        guard size >= 0, !row.isNull(column + 3) else { return nil }
        var index = -1
        // Most entries have none (a local file's, an S3 object's): nothing is made for them.
        let raw = row.unsafeBytes(column + 3)
        let text = raw.isEmpty ? nil : String(decoding: raw, as: UTF8.self)
        if let text {
            var parsed: [ChecksumAlgorithm: String] = [:]
            for pair in text.split(separator: ",") {
                guard let equals = pair.firstIndex(of: "=") else { return nil }
                parsed[ChecksumAlgorithm(rawValue: String(pair[..<equals]))] = String(pair[pair.index(after: equals)...])
            }
            index = checksums.count
            checksums.append(parsed)
        }
        let etag = row.isNull(column + 2) ? nil : appendText(row, column + 2)
        return Side(size: size, modified: row.isNull(column + 1) ? nil : Date(timeIntervalSince1970: row.double(column + 1)), etag: etag, checksums: index)
    }
}

private func systemClose(_ fd: Int32) { _ = close(fd) }
