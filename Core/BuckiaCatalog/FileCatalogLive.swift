import BuckiaCore
import BuckiaSQLite
import Foundation

extension FileCatalogClient {
    /// The catalog in the SQLite database at `path` (created when missing, in WAL mode), with
    /// its media folder from `configuration`.
    ///
    /// Opening migrates an older schema in one transaction, refuses (and leaves untouched) a
    /// database from a newer Buckia or another application, and finishes removals a previous
    /// run committed but did not get to (the outbox).
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` for a damaged database (rebuild it: remove the
    ///   file and fill a new one from the provider's listing);
    ///   ``BuckiaError/Code/invalidConfiguration`` for a database that is not this catalog's.
    public static func live(path: String, configuration: FileCatalogConfiguration = FileCatalogConfiguration()) throws -> FileCatalogClient {
        let catalog = try FileCatalogLive(path: path, configuration: configuration)
        return FileCatalogClient(
            getFiles: { try await catalog.run("get files") { try $0.files() } },
            getFile: { id in try await catalog.run("get file") { try $0.file(id) } },
            cacheFiles: { files in try await catalog.run("cache files") { try $0.upsert(files) } },
            cacheFile: { file in try await catalog.run("cache file") { try $0.upsert([file]) } },
            updateFileUrl: { id, url in try await catalog.run("update file url") { try $0.updateURL(id, url) } },
            deleteFile: { file in try await catalog.run("delete file") { try $0.delete(file) } },
            truncateFiles: { try await catalog.run("truncate files") { try $0.truncate() } },
            saveContext: { try await catalog.run("save") { try $0.checkpoint() } },
            observeFiles: { catalog.observe(FileQuery()) },
            fetchFiles: { query in try await catalog.run("fetch files") { try $0.fetch(query) } },
            observeQuery: { query in catalog.observe(query) })
    }
}

/// The live catalog: one connection, used by one caller at a time on the blocking-work threads
/// (a ``CatalogSession`` each).
package final class FileCatalogLive: Sendable {
    /// `BCAT`: marks a database as a file catalog (`PRAGMA application_id`).
    static let applicationID: Int64 = 0x4243_4154
    /// The migrations, in order: applying the first `n` gives schema version `n`. (`package`:
    /// the benchmark's raw SQLite runs the same statements.)
    package static let migrations: [String] = [
        """
        CREATE TABLE catalog_files (
            id INTEGER PRIMARY KEY,
            file_id TEXT NOT NULL UNIQUE,
            key TEXT NOT NULL UNIQUE,
            title TEXT,
            author_name TEXT,
            publish_date REAL,
            size INTEGER,
            url TEXT
        );
        CREATE INDEX catalog_files_newest ON catalog_files (publish_date DESC, key);
        CREATE TABLE catalog_removals (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('file', 'sweep')),
            path TEXT NOT NULL
        );
        """
    ]
    static var version: Int64 { Int64(migrations.count) }
    /// Rows per INSERT: 7 values a row within SQLite's historical minimum of 999 variables.
    package static let rowsPerStatement = 999 / 7

    /// The connection, which tracks its commits (``BuckiaSQLite/SQLiteConnection/takeCommitted()``):
    /// after each call that committed, the readers get a new list.
    private let database: SQLiteDatabase
    /// The live query's readers.
    let observers = CatalogObservers()
    private let media: MediaFolder?
    private let mediaName: @Sendable (FileRecord) -> String?
    let path: String
    /// How often a watched catalog asks; nil never (``FileCatalogConfiguration/otherConnectionsCheckInterval``).
    private let checkInterval: Duration?
    /// Whether the task asking on that schedule is running.
    private let watching = Locked(false)

    init(path: String, configuration: FileCatalogConfiguration) throws {
        self.path = path
        media = configuration.mediaFolder
        mediaName = configuration.mediaName
        checkInterval = configuration.otherConnectionsCheckInterval
        let db: SQLiteConnection
        do {
            db = try SQLiteConnection(path: path)
            try Self.prepare(db)
            _ = try CatalogSession(db: db, media: configuration.mediaFolder, mediaName: configuration.mediaName, path: path).drainRemovals()
        } catch let error as BuckiaError {
            throw Self.explained(error, path: path)
        }
        db.trackCommits()
        database = SQLiteDatabase(db)
    }

    /// Runs `body` with the connection on the blocking-work threads, one caller at a time;
    /// when it committed, the readers get their new lists before the next caller runs.
    func run<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (CatalogSession) throws -> T) async throws -> T {
        try await database.run(operation) { [self] db in
            let session = CatalogSession(db: db, media: media, mediaName: mediaName, path: path)
            defer {
                if db.takeCommitted() { observers.publish(session.fetch) }
            }
            do {
                return try body(session)
            } catch let error as BuckiaError {
                throw Self.explained(error, path: path)
            }
        }
    }

    /// A live query of `query`: its list now, then after each change here or, while read, in
    /// another connection (``watchOtherConnections()``).
    func observe(_ query: FileQuery) -> AsyncThrowingStream<[FileRecord], any Error> {
        let (stream, continuation) = CatalogObservers.makeStream()
        let start = Task {
            do {
                try await run("observe files") { [observers] catalog in
                    // Another connection's commit not yet handed to the readers there are goes
                    // to them first: the new reader's first list holds it, and from here on
                    // only a commit after that list is news.
                    if try catalog.otherConnectionsCommitted() { observers.publish(catalog.fetch) }
                    observers.add(continuation, query: query, make: catalog.fetch)
                }
                watchOtherConnections()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in start.cancel() }
        return stream
    }

    /// Starts asking, every ``checkInterval``, whether another connection committed, handing the
    /// readers a new list when one did; the task ends once the live query has no reader (the
    /// next reader starts it again) or no one holds the catalog any more (it holds the catalog
    /// only while it asks, never while it waits). An error asking ends every reader's stream
    /// with it.
    func watchOtherConnections() {
        guard let interval = checkInterval else { return }
        guard watching.withLock({ running in
            defer { running = true }
            return !running
        }) else { return }
        Task { [weak self] in
            while true {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    // Never cancelled: the loop ends by the checks below.
                }
                guard let self else { return }
                // Checked and cleared under one lock with the start above, so a reader added
                // at this moment either keeps this task going or starts the next one.
                let readers = watching.withLock { running -> Bool in
                    if !observers.isWatched { running = false }
                    return running
                }
                guard readers else { return }
                do {
                    try await run("watch other connections") { [observers] catalog in
                        if try catalog.otherConnectionsCommitted() { observers.publish(catalog.fetch) }
                    }
                } catch {
                    observers.publish { _ in throw error }
                }
            }
        }
    }

    /// A corrupt database's error, with the way back.
    static func explained(_ error: BuckiaError, path: String) -> BuckiaError {
        guard error.code == .corrupt else { return error }
        return BuckiaError(
            .corrupt,
            "The file catalog at \(path) is damaged (\(error.message)). Nothing was changed. Rebuild it: remove the file and fill a new catalog from the provider's listing (buckia catalog refresh).",
            operation: error.operation, path: path, cause: error)
    }

    static func prepare(_ db: SQLiteConnection) throws {
        try db.migrate(applicationID: applicationID, migrations: migrations, kind: "file catalog", operation: "open catalog")
        try db.setSynchronous(.normal)
        try ensureSearchIndex(db)
    }

    /// Whether this SQLite has FTS5 (Debian's and Apple's do; a minimal build may not).
    static func hasFullTextSearch(_ db: SQLiteConnection) throws -> Bool {
        try db.query("SELECT sqlite_compileoption_used('ENABLE_FTS5')") { $0.int64(0) }.first == 1
    }

    /// The full-text index over title, author and key, kept by triggers: made (and filled
    /// from the records) when this SQLite has FTS5 and the file lacks it, so a catalog written
    /// by a build without FTS5 gains search when opened by one with it. Not a migration: it
    /// depends on the library, not on the schema.
    static func ensureSearchIndex(_ db: SQLiteConnection) throws {
        guard try hasFullTextSearch(db) else { return }
        let present = { try db.query("SELECT count(*) FROM sqlite_schema WHERE name = 'catalog_search'") { $0.int64(0) }.first ?? 0 }
        guard try present() == 0 else { return }
        // Checked again under the write lock: another process may be making it right now.
        try db.transaction {
            guard try present() == 0 else { return }
            try db.execute(searchIndex)
        }
    }

    /// The full-text index, its triggers, and filling it from the records.
    package static let searchIndex: String = {
        let fields = "title, author_name, key"
        return """
                CREATE VIRTUAL TABLE catalog_search USING fts5(\(fields), content='catalog_files', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
                CREATE TRIGGER catalog_search_insert AFTER INSERT ON catalog_files BEGIN
                    INSERT INTO catalog_search (rowid, \(fields)) VALUES (new.id, new.title, new.author_name, new.key);
                END;
                CREATE TRIGGER catalog_search_delete AFTER DELETE ON catalog_files BEGIN
                    INSERT INTO catalog_search (catalog_search, rowid, \(fields)) VALUES ('delete', old.id, old.title, old.author_name, old.key);
                END;
                CREATE TRIGGER catalog_search_update AFTER UPDATE ON catalog_files BEGIN
                    INSERT INTO catalog_search (catalog_search, rowid, \(fields)) VALUES ('delete', old.id, old.title, old.author_name, old.key);
                    INSERT INTO catalog_search (rowid, \(fields)) VALUES (new.id, new.title, new.author_name, new.key);
                END;
                INSERT INTO catalog_search (catalog_search) VALUES ('rebuild');
                """
    }()
}

extension FileCatalogLive {
    package static let columns = "file_id, key, title, author_name, publish_date, size, url"

    static func record(_ row: SQLiteRow) -> FileRecord {
        var record = FileRecord(
            fileId: row.string(0) ?? "", key: row.string(1) ?? "", title: row.string(2), authorName: row.string(3),
            publishDate: row.isNull(4) ? nil : Date(timeIntervalSince1970: row.double(4)), size: row.isNull(5) ? nil : row.int64(5))
        // Stored from a URL's absoluteString: kept as text, parsed when the app reads `url`.
        record.urlText = row.string(6)
        return record
    }

    /// The last record of each `fileId`, in the order of their last appearance: a batch that
    /// names a file twice stores what it says last.
    static func lastOfEach(_ files: [FileRecord]) -> [FileRecord] {
        var seen = Set<ExactText>()
        return files.reversed().filter { seen.insert(ExactText($0.fileId)).inserted }.reversed()
    }

    /// The upsert of `rows` records, seven values each in ``columns`` order.
    package static func upsertStatement(rows: Int) -> String {
        let values = Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
        return """
            INSERT INTO catalog_files (\(columns)) VALUES \(values)
            ON CONFLICT (file_id) DO UPDATE SET key = excluded.key, title = excluded.title, author_name = excluded.author_name,
                publish_date = excluded.publish_date, size = excluded.size, url = excluded.url
            """
    }

    static func values(_ file: FileRecord) -> [SQLiteValue] {
        [
            .text(file.fileId), .text(file.key), file.title.map { .text($0) } ?? .null, file.authorName.map { .text($0) } ?? .null,
            file.publishDate.map { .real($0.timeIntervalSince1970) } ?? .null, file.size.map { .integer($0) } ?? .null,
            file.urlText.map { .text($0) } ?? .null,
        ]
    }
}

/// One call's hold on the live catalog: its connection, for the length of a
/// ``FileCatalogLive/run(_:_:)`` closure, with what the records' media need.
struct CatalogSession {
    let db: SQLiteConnection
    let media: MediaFolder?
    let mediaName: @Sendable (FileRecord) -> String?
    let path: String

    /// The records `query` asks for.
    ///
    /// - Throws: ``BuckiaError/Code/unsupported`` for a search when this SQLite lacks FTS5.
    func fetch(_ query: FileQuery) throws -> [FileRecord] {
        try query.validate()
        var sql = "SELECT \(FileCatalogLive.columns) FROM catalog_files"
        var values: [SQLiteValue] = []
        let terms = query.searchTerms
        if !terms.isEmpty {
            guard try FileCatalogLive.hasFullTextSearch(db) else {
                throw BuckiaError(
                    .unsupported, "This SQLite library was built without FTS5, which catalog search needs; listing and paging work without it.",
                    operation: "search files", path: path)
            }
            // Each term quoted (it holds only letters and digits) and matched as a word's prefix.
            sql += " WHERE id IN (SELECT rowid FROM catalog_search WHERE catalog_search MATCH ?1)"
            values.append(.text(terms.map { "\"\($0)\"*" }.joined(separator: " AND ")))
        }
        sql += " ORDER BY " + query.order.sql
        if let limit = query.limit {
            sql += " LIMIT \(limit) OFFSET \(query.offset)"
        } else if query.offset > 0 {
            sql += " LIMIT -1 OFFSET \(query.offset)"
        }
        // Rows gathered here, not through the generic `query`, which is not specialised across
        // the module boundary and copies each record through value witnesses.
        var records: [FileRecord] = []
        try db.forEachRow(sql, values) { row in
            records.append(FileCatalogLive.record(row))
            return true
        }
        return records
    }

    // MARK: Reads

    func files() throws -> [FileRecord] {
        try fetch(FileQuery())
    }

    func file(_ id: String) throws -> FileRecord? {
        try db.query("SELECT \(FileCatalogLive.columns) FROM catalog_files WHERE file_id = ?1", [.text(id)], FileCatalogLive.record).first
    }

    // MARK: Writes

    /// One transaction of multi-row upserts. A record whose key another record holds replaces
    /// that record (its media queued for removal unless the new record names the same file).
    func upsert(_ batch: [FileRecord]) throws {
        for file in batch { try file.validate() }
        let files = FileCatalogLive.lastOfEach(batch)
        // Two records of the batch with one key: the later one wins, as it would one at a time.
        // Text compared as bytes, as SQLite compares it: NFC and NFD twins are two keys.
        var byKey: [ExactText: ExactText] = [:]
        for file in files { byKey[ExactText(file.key)] = ExactText(file.fileId) }
        let kept = files.filter { byKey[ExactText($0.key)] == ExactText($0.fileId) }
        let keptNames = Set(kept.compactMap(mediaName).map(ExactText.init))
        let queued = try removalTransaction { () -> Bool in
            var queued = false
            var start = 0
            while start < kept.count {
                let chunk = Array(kept[start..<min(start + FileCatalogLive.rowsPerStatement, kept.count)])
                start += chunk.count
                // Records elsewhere holding one of these keys under another fileId go first.
                let pairs = Array(repeating: "(?, ?)", count: chunk.count).joined(separator: ", ")
                let conflicting = try db.query(
                    "SELECT \(FileCatalogLive.columns.split(separator: ",").map { "f." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")) FROM catalog_files f JOIN (VALUES \(pairs)) v ON f.key = v.column1 AND f.file_id <> v.column2",
                    chunk.flatMap { [.text($0.key), .text($0.fileId)] }, FileCatalogLive.record)
                for old in conflicting {
                    try db.run("DELETE FROM catalog_files WHERE file_id = ?1", [.text(old.fileId)])
                    if let name = mediaName(old), !keptNames.contains(ExactText(name)), media != nil {
                        try db.run("INSERT INTO catalog_removals (kind, path) VALUES ('file', ?1)", [.text(name)])
                        queued = true
                    }
                }
                try db.run(FileCatalogLive.upsertStatement(rows: chunk.count), chunk.flatMap(FileCatalogLive.values))
            }
            return queued
        }
        if queued { try finishRemovals() }
    }

    func updateURL(_ id: String, _ url: URL) throws {
        guard !url.absoluteString.utf8.contains(0) else {
            throw BuckiaError(.invalidConfiguration, "The URL for \(id.debugDescription) holds a NUL character.", operation: "update file url")
        }
        try db.run("UPDATE catalog_files SET url = ?2 WHERE file_id = ?1", [.text(id), .text(url.absoluteString)])
        guard db.changes > 0 else { throw BuckiaError(.notFound, "No file record has the fileId \(id.debugDescription).", operation: "update file url") }
    }

    /// Removes the record, queueing its media in the same transaction, then removes the media.
    func delete(_ file: FileRecord) throws {
        let queued = try removalTransaction { () -> Bool in
            let stored = try self.file(file.fileId)
            try db.run("DELETE FROM catalog_files WHERE file_id = ?1", [.text(file.fileId)])
            guard media != nil, let name = mediaName(stored ?? file) else { return false }
            try db.run("INSERT INTO catalog_removals (kind, path) VALUES ('file', ?1)", [.text(name)])
            return true
        }
        if queued { try finishRemovals() }
    }

    func truncate() throws {
        let queued = try removalTransaction { () -> Bool in
            try db.run("DELETE FROM catalog_files")
            guard media != nil else { return false }
            try db.run("INSERT INTO catalog_removals (kind, path) VALUES ('sweep', '')")
            return true
        }
        if queued { try finishRemovals() }
    }

    func checkpoint() throws {
        try db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    }

    // MARK: The outbox

    /// A transaction that may queue media removals: with a media folder, its commit is
    /// synced to disk (`synchronous = FULL` for this commit alone), so that no power loss can
    /// undo a commit whose files were then removed. Without one it is an ordinary commit.
    private func removalTransaction<T>(_ body: () throws -> T) throws -> T {
        guard media != nil else { return try db.transaction(.immediate, body) }
        try db.setSynchronous(.full)
        let result: T
        do {
            result = try db.transaction(.immediate, body)
        } catch {
            try db.setSynchronous(.normal)
            throw error
        }
        try db.setSynchronous(.normal)
        return result
    }

    /// Runs the queued removals; a failure is reported with what stays queued.
    private func finishRemovals() throws {
        let failures = try drainRemovals()
        if let first = failures.first {
            throw BuckiaError(
                .io,
                "The catalog was updated, but \(failures.count) media file\(failures.count == 1 ? "" : "s") could not be removed (\(first.message)); the removal stays queued and is tried again when the catalog next opens or changes.",
                operation: "remove media", path: first.path, cause: first)
        }
    }

    /// Runs every queued removal, deleting each entry once done (or once there is nothing to
    /// remove, or the path is one a catalog never removes); returns the failures, which stay
    /// queued.
    func drainRemovals() throws -> [BuckiaError] {
        // Opened without a media folder (a reader such as `catalog ls`): the queue waits for
        // an open that knows the folder, rather than being dropped with its files orphaned.
        guard let media else { return [] }
        let queued = try db.query("SELECT id, kind, path FROM catalog_removals ORDER BY id") { ($0.int64(0), $0.string(1) ?? "", $0.string(2) ?? "") }
        var failures: [BuckiaError] = []
        for (id, kind, path) in queued {
            // Done, nothing there, or a path that could leave the folder (never acted on, so
            // never retried): the entry goes. A failure keeps it.
            do {
                if kind == "sweep" {
                    _ = try media.sweep()
                } else {
                    _ = try media.remove(path)
                }
            } catch let error as BuckiaError {
                failures.append(error)
                continue
            }
            try db.run("DELETE FROM catalog_removals WHERE id = ?1", [.integer(id)])
        }
        return failures
    }

    /// Whether another connection committed since this one last asked.
    func otherConnectionsCommitted() throws -> Bool {
        try db.othersCommitted()
    }
}
