import BuckiaCore
import Foundation

/// The app's file catalog as a dependency: a struct of closures, so a feature takes one value
/// and a test swaps in another (``inMemory(configuration:)``, ``failing``), the seed's
/// `CoreDataClient` made portable.
///
/// Every operation throws a ``BuckiaError`` that says what failed; none swallows one. The
/// ``live(path:configuration:)`` catalog keeps the records in SQLite, so they survive restarts.
public struct FileCatalogClient: Sendable {
    /// Every record, the newest first (``FileRecord/newestFirst(_:_:)``).
    public var getFiles: @Sendable () async throws -> [FileRecord]
    /// The record with this `fileId`, or nil.
    public var getFile: @Sendable (_ fileId: String) async throws -> FileRecord?
    /// Inserts or replaces records, all or none: one transaction.
    public var cacheFiles: @Sendable (_ files: [FileRecord]) async throws -> Void
    /// Inserts or replaces one record.
    public var cacheFile: @Sendable (_ file: FileRecord) async throws -> Void
    /// Sets a record's URL.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when no record has this `fileId`.
    public var updateFileUrl: @Sendable (_ fileId: String, _ url: URL) async throws -> Void
    /// Removes a record and then its downloaded copy in the media folder.
    public var deleteFile: @Sendable (_ file: FileRecord) async throws -> Void
    /// Removes every record, then the media folder's files with the configured extensions.
    public var truncateFiles: @Sendable () async throws -> Void
    /// Makes every change so far durable in the main database file (a WAL checkpoint); each
    /// operation above is already committed when it returns.
    public var saveContext: @Sendable () async throws -> Void
    /// The catalog's records (newest first) now, and again after every change: a live query
    /// for a list on screen. Snapshots are made off the caller's actor and coalesced, so a
    /// slow reader gets the latest list, never a backlog. The stream ends when the reader
    /// stops iterating.
    public var observeFiles: @Sendable () -> AsyncThrowingStream<[FileRecord], any Error>
    /// A page of records in an order, optionally those matching words of a search
    /// (``FileQuery``); the live catalog searches with SQLite's FTS5 index.
    public var fetchFiles: @Sendable (_ query: FileQuery) async throws -> [FileRecord]
    /// A live query of any ``FileQuery``: what ``fetchFiles`` returns for it now, and again
    /// after every change, coalesced as ``observeFiles`` is (which is this for `FileQuery()`).
    /// A query that ``fetchFiles`` refuses ends the stream with that error.
    public var observeQuery: @Sendable (_ query: FileQuery) -> AsyncThrowingStream<[FileRecord], any Error>

    /// A client made of these closures.
    public init(
        getFiles: @escaping @Sendable () async throws -> [FileRecord],
        getFile: @escaping @Sendable (_ fileId: String) async throws -> FileRecord?,
        cacheFiles: @escaping @Sendable (_ files: [FileRecord]) async throws -> Void,
        cacheFile: @escaping @Sendable (_ file: FileRecord) async throws -> Void,
        updateFileUrl: @escaping @Sendable (_ fileId: String, _ url: URL) async throws -> Void,
        deleteFile: @escaping @Sendable (_ file: FileRecord) async throws -> Void,
        truncateFiles: @escaping @Sendable () async throws -> Void,
        saveContext: @escaping @Sendable () async throws -> Void,
        observeFiles: @escaping @Sendable () -> AsyncThrowingStream<[FileRecord], any Error>,
        fetchFiles: @escaping @Sendable (_ query: FileQuery) async throws -> [FileRecord],
        observeQuery: (@Sendable (_ query: FileQuery) -> AsyncThrowingStream<[FileRecord], any Error>)? = nil
    ) {
        self.getFiles = getFiles
        self.getFile = getFile
        self.cacheFiles = cacheFiles
        self.cacheFile = cacheFile
        self.updateFileUrl = updateFileUrl
        self.deleteFile = deleteFile
        self.truncateFiles = truncateFiles
        self.saveContext = saveContext
        self.observeFiles = observeFiles
        self.fetchFiles = fetchFiles
        self.observeQuery = observeQuery ?? Self.observing(fetchFiles, after: observeFiles)
    }

    /// A live query made of two operations, for a catalog that gives none of its own: `fetch`
    /// runs for the query at the start and after each list `changes` yields. Its lists follow
    /// each change as soon as that fetch has run, not before the change's operation returns.
    static func observing(
        _ fetch: @escaping @Sendable (FileQuery) async throws -> [FileRecord],
        after changes: @escaping @Sendable () -> AsyncThrowingStream<[FileRecord], any Error>
    ) -> @Sendable (FileQuery) -> AsyncThrowingStream<[FileRecord], any Error> {
        { query in
            let (stream, continuation) = CatalogObservers.makeStream()
            let task = Task {
                do {
                    for try await _ in changes() { continuation.yield(try await fetch(query)) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
            return stream
        }
    }
}

/// Where a catalog's media lives and what it may remove there.
public struct FileCatalogConfiguration: Sendable {
    /// The folder downloaded media is kept in; nil for a catalog that removes no files.
    public var mediaRoot: URL?
    /// The extensions ``FileCatalogClient/truncateFiles`` removes from the media folder (the
    /// seed's list by default), compared without regard to case.
    public var mediaExtensions: Set<String> = ["mp4", "mp3", "m4a", "mov", "m4v", "wav", "webm"]
    /// The path, relative to the media folder, of a record's downloaded copy, or nil when it
    /// has none: by default its URL's last path component. Whatever it returns is checked
    /// (no absolute path, no `..`, no link crossed) before anything is removed.
    public var mediaName: @Sendable (FileRecord) -> String? = { record in
        guard let name = record.url?.lastPathComponent, !name.isEmpty, name != "/" else { return nil }
        return name
    }

    /// How often a catalog whose live query has a reader asks SQLite whether another
    /// connection to its file committed — another process, or another catalog opened on the
    /// same path — and if one did, hands the readers a new list. The question is one
    /// `PRAGMA data_version`, asked only while someone reads. nil: never; such a commit then
    /// reaches the readers with this catalog's next change. The in-memory catalog, which no
    /// one else can write, ignores it.
    public var otherConnectionsCheckInterval: Duration? = .milliseconds(250)

    /// A configuration with `mediaRoot`.
    public init(mediaRoot: URL? = nil) {
        self.mediaRoot = mediaRoot
    }

    var mediaFolder: MediaFolder? {
        mediaRoot.map { MediaFolder(root: $0, extensions: Set(mediaExtensions.map { $0.lowercased() })) }
    }
}

extension FileCatalogClient {
    /// A client whose every operation throws ``BuckiaError/Code/unsupported`` naming itself:
    /// the starting point of a test, which overrides the operations it expects to be called,
    /// so that any other call fails the test loudly instead of passing unnoticed.
    public static var failing: FileCatalogClient {
        @Sendable func fail(_ operation: String) -> BuckiaError {
            BuckiaError(
                .unsupported,
                "FileCatalogClient.failing: \(operation) was called, and the test did not expect it. Override \(operation) in the test if it should be.",
                operation: operation)
        }
        return FileCatalogClient(
            getFiles: { throw fail("getFiles") }, getFile: { _ in throw fail("getFile") }, cacheFiles: { _ in throw fail("cacheFiles") },
            cacheFile: { _ in throw fail("cacheFile") }, updateFileUrl: { _, _ in throw fail("updateFileUrl") }, deleteFile: { _ in throw fail("deleteFile") },
            truncateFiles: { throw fail("truncateFiles") }, saveContext: { throw fail("saveContext") },
            observeFiles: { AsyncThrowingStream { $0.finish(throwing: fail("observeFiles")) } }, fetchFiles: { _ in throw fail("fetchFiles") },
            observeQuery: { _ in AsyncThrowingStream { $0.finish(throwing: fail("observeQuery")) } })
    }

    /// A catalog in memory, with the same rules as the live one (validation, key replacement,
    /// order, media removal inside the configured folder), for previews and tests; its
    /// records go with the process.
    public static func inMemory(configuration: FileCatalogConfiguration = FileCatalogConfiguration()) -> FileCatalogClient {
        let records = Locked(InMemoryRecords())
        let observers = CatalogObservers()
        let media = configuration.mediaFolder
        let name = configuration.mediaName
        @Sendable func upsert(_ files: [FileRecord]) throws {
            for file in files { try file.validate() }
            let replaced = records.withLock { records -> [FileRecord] in
                var replaced: [FileRecord] = []
                for file in files {
                    if let other = records.store(file) { replaced.append(other) }
                }
                return replaced
            }
            publish()
            try removeMedia(of: replaced, keeping: files)
        }
        @Sendable func snapshot() -> [FileRecord] {
            records.withLock { Array($0.byID.values) }.sorted(by: FileRecord.newestFirst)
        }
        @Sendable func fetch(_ query: FileQuery) throws -> [FileRecord] {
            try query.validate()
            let all = records.withLock { Array($0.byID.values) }
            return query.page(query.search == nil ? all : all.filter(query.matches))
        }
        @Sendable func publish() {
            observers.publish(fetch)
        }
        @Sendable func removeMedia(of gone: [FileRecord], keeping kept: [FileRecord]) throws {
            guard let media else { return }
            let keptNames = Set(kept.compactMap(name).map(ExactText.init))
            for record in gone {
                guard let path = name(record), !keptNames.contains(ExactText(path)) else { continue }
                _ = try media.remove(path)  // a name that could leave the folder is refused, not an error
            }
        }
        return FileCatalogClient(
            getFiles: { snapshot() },
            getFile: { id in records.withLock { $0.byID[ExactText(id)] } },
            cacheFiles: { files in try upsert(FileCatalogLive.lastOfEach(files)) },
            cacheFile: { file in try upsert([file]) },
            updateFileUrl: { id, url in
                let found = records.withLock { records -> Bool in
                    guard records.byID[ExactText(id)] != nil else { return false }
                    records.byID[ExactText(id)]?.url = url
                    return true
                }
                guard found else { throw BuckiaError(.notFound, "No file record has the fileId \(id.debugDescription).", operation: "update file url") }
                publish()
            },
            deleteFile: { file in
                let stored = records.withLock { $0.remove(file.fileId) }
                if stored != nil { publish() }
                try removeMedia(of: [stored ?? file], keeping: [])
            },
            truncateFiles: {
                records.withLock { $0 = InMemoryRecords() }
                publish()
                _ = try media?.sweep()
            },
            saveContext: {},
            observeFiles: {
                let (stream, continuation) = CatalogObservers.makeStream()
                observers.add(continuation, make: fetch)
                return stream
            },
            fetchFiles: fetch,
            observeQuery: { query in
                let (stream, continuation) = CatalogObservers.makeStream()
                observers.add(continuation, query: query, make: fetch)
                return stream
            })
    }
}

/// The in-memory catalog's records, keyed by the bytes of their fileId and of their key, as
/// SQLite compares text: NFC and NFD twins are two records.
struct InMemoryRecords {
    var byID: [ExactText: FileRecord] = [:]
    /// Key → the fileId holding it.
    var holders: [ExactText: ExactText] = [:]

    /// Stores `file`, replacing the record with its fileId; returns the record of another
    /// fileId that held its key, which it replaces too.
    mutating func store(_ file: FileRecord) -> FileRecord? {
        let id = ExactText(file.fileId)
        let key = ExactText(file.key)
        var replaced: FileRecord?
        if let holder = holders[key], holder != id {
            replaced = byID.removeValue(forKey: holder)
        }
        if let previous = byID[id] { holders[ExactText(previous.key)] = nil }
        byID[id] = file
        holders[key] = id
        return replaced
    }

    mutating func remove(_ fileId: String) -> FileRecord? {
        guard let removed = byID.removeValue(forKey: ExactText(fileId)) else { return nil }
        holders[ExactText(removed.key)] = nil
        return removed
    }
}

/// The readers of a catalog's live queries: each gets its query's list when it starts, then
/// the list after each change, keeping only the newest one it has not read yet.
///
/// Lists are made and handed out under one lock, so readers see lists in the order the
/// changes happened, and a new reader's first list is never older than one handed to it after.
/// Readers of one query share the list made for it.
final class CatalogObservers: Sendable {
    typealias Continuation = AsyncThrowingStream<[FileRecord], any Error>.Continuation
    private let readers = Locked<[UUID: (query: FileQuery, continuation: Continuation)]>([:])

    /// Whether anyone is reading: a change makes a list only then.
    var isWatched: Bool { readers.withLock { !$0.isEmpty } }

    /// A stream for a new reader and its continuation, to be given to ``add(_:initial:)``.
    static func makeStream() -> (AsyncThrowingStream<[FileRecord], any Error>, Continuation) {
        AsyncThrowingStream<[FileRecord], any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Starts handing `query`'s lists to `continuation`, the first one `make(query)`'s (or its
    /// error, which ends the stream).
    ///
    /// A stream is finished only after the lock is let go: finishing runs its termination
    /// handler, which takes the lock to remove the reader.
    func add(_ continuation: Continuation, query: FileQuery = FileQuery(), make: (FileQuery) throws -> [FileRecord]) {
        let id = UUID()
        continuation.onTermination = { [readers] _ in readers.withLock { _ = $0.removeValue(forKey: id) } }
        let failure = readers.withLock { readers -> (any Error)? in
            do {
                // A reader gone before it started is not kept.
                if case .terminated = continuation.yield(try make(query)) { return nil }
                readers[id] = (query, continuation)
                return nil
            } catch {
                return error
            }
        }
        if let failure { continuation.finish(throwing: failure) }
    }

    /// Hands every reader the list `make` returns for its query (made once per query); an
    /// error ends every stream (after the lock is let go, as in ``add(_:query:make:)``).
    func publish(_ make: (FileQuery) throws -> [FileRecord]) {
        let ended = readers.withLock { readers -> (error: any Error, readers: [Continuation])? in
            guard !readers.isEmpty else { return nil }
            do {
                var lists: [FileQuery: [FileRecord]] = [:]
                for (query, continuation) in readers.values {
                    let files = try lists[query] ?? make(query)
                    lists[query] = files
                    continuation.yield(files)
                }
                return nil
            } catch {
                defer { readers.removeAll() }
                return (error, readers.values.map(\.continuation))
            }
        }
        if let ended {
            for continuation in ended.readers { continuation.finish(throwing: ended.error) }
        }
    }
}
