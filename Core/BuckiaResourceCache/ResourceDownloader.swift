import BuckiaCore
import BuckiaHTTP
import Foundation

/// Fetches resources through a ``ResourceCache``: from the cache while fresh, with a
/// conditional request once stale, and with one download per resource however many ask for it
/// at once.
///
/// HTTP caching follows RFC 9111 for a private cache: `max-age`, `Expires`, the heuristic
/// (a tenth of the time since `Last-Modified`, at most a day), `no-store` (never kept),
/// `no-cache` (asked about before every use), `must-revalidate` (never served stale), and
/// RFC 5861's `stale-while-revalidate` and `stale-if-error`. A 304 refreshes the stored
/// headers and freshness without a body. A body shorter than its `Content-Length` is an error
/// and is never cached.
public final class ResourceDownloader: Sendable {
    /// How a fetch was answered.
    public enum Outcome: String, Sendable, Codable {
        /// From the cache, fresh.
        case hit
        /// From the cache after the origin said it had not changed (304).
        case revalidated
        /// Downloaded (and cached, unless the response said `no-store`).
        case downloaded
        /// From the cache, stale: within `stale-while-revalidate` (a refresh runs behind it)
        /// or `stale-if-error` (the origin failed).
        case stale
    }

    /// A fetched resource.
    public struct Fetched: Sendable {
        /// Its bytes.
        public let data: Data
        /// Its cached file; nil when the response said `no-store`.
        public let file: URL?
        /// How it was answered.
        public let outcome: Outcome
        /// What the origin said.
        public let response: CachedResponse
    }

    /// The cache it fills.
    public let cache: ResourceCache
    let client: HTTPClient
    let remote: @Sendable (String) throws -> any StorageProvider
    let flights = Locked<[String: Flight]>([:])
    let slots: DownloadSlots
    let now: @Sendable () -> Date

    /// - Parameters:
    ///   - cache: Where resources are kept.
    ///   - client: The HTTP client (Buckia's one transport; retries transient failures).
    ///   - remote: The provider for a `remote:path` location's remote name.
    ///   - clock: The time freshness is judged by; injected by tests.
    public init(
        cache: ResourceCache, client: HTTPClient = HTTPClient(),
        remote: @escaping @Sendable (String) throws -> any StorageProvider = { name in
            throw BuckiaError(.invalidConfiguration, "No remote named \(name.debugDescription) is configured for the downloader.", operation: "fetch")
        },
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.cache = cache
        self.client = client
        self.remote = remote
        self.now = clock
        slots = DownloadSlots(max(1, cache.configuration.maxConcurrentDownloads))
    }

    /// The resource at `location`, from the cache when it may be, else from the origin.
    ///
    /// Concurrent fetches of one resource share one download. Cancelling one of them ends its
    /// own wait; cancelling the last one waiting cancels the download too (nothing is
    /// cached), and a later fetch starts afresh.
    ///
    /// - Parameter progress: Hears the bytes of the resource received so far, as they arrive
    ///   (from this process's download; a fetch that joins one under way hears the total at
    ///   the next report; a fetch answered from the cache, or by another process's download,
    ///   hears nothing). Called on a transfer thread: keep it short.
    public func fetch(_ location: ResourceLocation, progress: (@Sendable (Int64) -> Void)? = nil) async throws -> Fetched {
        guard !location.holdsCredentials else {
            // One entry serves whoever asks: a response fetched with one user's password must
            // not answer another's request, nor the password sit in the index.
            throw BuckiaError(
                .invalidConfiguration,
                "The URL \(location.text) holds a user name or password; the resource cache never fetches or keeps credentials. Send them in the HTTP client's Authorization header instead.",
                operation: "fetch", path: location.text)
        }
        let key = try cache.key(for: location)
        // From memory on this thread (one index query); a disk read goes to a blocking-work one.
        var found = try cache.lookupInMemory(location)
        if found == nil { found = try await onDisk { try $0.lookup(location) } }
        if let cached = found {
            let stamp = now()
            if cached.response.isFresh(at: stamp) {
                return Fetched(data: cached.data, file: cached.file, outcome: .hit, response: cached.response)
            }
            let control = CacheControl(cached.response.cacheControl)
            if !control.mustRevalidate, let window = control.staleWhileRevalidate, let fresh = cached.response.freshUntil,
                stamp < fresh.addingTimeInterval(TimeInterval(window)), !cached.response.clockMovedBack(stamp)
            {
                // Served now; the refresh runs behind it, shared with any other.
                _ = flightFor(key) { try await self.refresh(location, key: key) }
                return Fetched(data: cached.data, file: cached.file, outcome: .stale, response: cached.response)
            }
        }
        while true {
            let flight = flightFor(key) { try await self.refresh(location, key: key) }
            do {
                return try await flight.wait(progress: progress) { self.abandon(flight, key: key) }
            } catch is Flight.Abandoned {
                // Its last waiter left as this fetch joined: start another once it is out of
                // the table (an instant).
                await Task.yield()
                continue
            }
        }
    }

    /// Fetches each location (at most ``ResourceCacheConfiguration/maxConcurrentDownloads``
    /// downloads at once) and returns the failures by location; the others are cached.
    public func prefetch(_ locations: [ResourceLocation]) async -> [ResourceLocation: any Error] {
        await withTaskGroup(of: (ResourceLocation, (any Error)?).self) { group in
            for location in locations {
                group.addTask {
                    do {
                        _ = try await self.fetch(location)
                        return (location, nil)
                    } catch {
                        return (location, error)
                    }
                }
            }
            var failures: [ResourceLocation: any Error] = [:]
            for await (location, error) in group {
                if let error { failures[location] = error }
            }
            return failures
        }
    }

    /// Runs cache work (SQLite, file reads and writes, `fsync`, hashing) on Buckia's
    /// blocking-work threads, never the cooperative pool's: a thousand fetches at once would
    /// otherwise hold its few threads and stall every other task of the process.
    func onDisk<T: Sendable>(_ body: @escaping @Sendable (ResourceCache) throws -> T) async throws -> T {
        let cache = cache
        return try await BlockingWork.run("resource cache") { try body(cache) }
    }

    // MARK: One download per resource

    /// The flight for `key`, started with `work` when none is under way.
    func flightFor(_ key: String, _ work: @escaping @Sendable () async throws -> Fetched) -> Flight {
        let (flight, isNew) = flights.withLock { flights -> (Flight, Bool) in
            if let running = flights[key] { return (running, false) }
            let flight = Flight()
            flights[key] = flight
            return (flight, true)
        }
        if isNew {
            flight.start {
                let result: Result<Fetched, any Error>
                do {
                    // The transfer's bytes go to every waiter's progress.
                    result = .success(try await TransferProgress.$observer.withValue(flight.observer) { try await work() })
                } catch {
                    result = .failure(error)
                }
                self.flights.withLock { flights in
                    if flights[key] === flight { flights.removeValue(forKey: key) }
                }
                flight.finish(result)
            }
        }
        return flight
    }

    /// How many fetches wait on the download of `location` in this process (0: none under
    /// way): for tests that must act once a fetch has joined.
    func waiters(_ location: ResourceLocation) throws -> Int {
        let key = try cache.key(for: location)
        return flights.withLock { $0[key] }?.waiting ?? 0
    }

    /// Cancels a flight whose last waiter left: out of the table first, so a fetch arriving
    /// now starts a new one rather than join one being cancelled.
    func abandon(_ flight: Flight, key: String) {
        flights.withLock { flights in
            if flights[key] === flight { flights.removeValue(forKey: key) }
        }
        flight.cancel()
    }

    /// Asks the origin: a conditional request when something is cached, then stores, refreshes
    /// or (on failure, within `stale-if-error`) serves what is cached.
    func refresh(_ location: ResourceLocation, key: String) async throws -> Fetched {
        try await slots.run {
            // One download per entry across processes sharing the folder: the lock file is
            // held for the whole request, and whoever waited on it finds the entry stored.
            let lock = try await EntryLock.acquire(folder: self.cache.locks, key: key)
            defer { lock.release() }
            // Another process, or a flight that just ended, may have stored it meanwhile.
            let cached = try await self.onDisk { try $0.lookup(location) }
            if let cached, cached.response.isFresh(at: self.now()) {
                return Fetched(data: cached.data, file: cached.file, outcome: .hit, response: cached.response)
            }
            switch location {
            case .url(let url): return try await self.download(url, location: location, cached: cached)
            case .remote(let name, let path): return try await self.read(name, path, location: location)
            }
        }
    }

    func download(_ url: URL, location: ResourceLocation, cached: CachedResource?) async throws -> Fetched {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw BuckiaError(.invalidConfiguration, "\(url.scheme ?? "no scheme") URLs are not fetched; give an http(s) URL or REMOTE:PATH.", operation: "fetch")
        }
        var headers = HTTPHeaders()
        if let cached {
            if let etag = cached.response.etag { headers.set("If-None-Match", etag) }
            if let modified = cached.response.lastModified { headers.set("If-Modified-Since", modified) }
        }
        // Into the cache's own download folder, renamed into place from there: one file
        // written per resource. Gone by the end unless it became the entry.
        let temporary = try cache.downloadPath()
        defer { _ = unlink(temporary.path) }
        let requestTime = now()
        let response: HTTPResponse
        var request = HTTPRequest(.get, url, headers: headers, accepts: .successfulAnd([304]))
        request.maximumBodySize = cache.configuration.resourceLimit
        do {
            response = try await client.download(request, to: temporary)
        } catch let error as BuckiaError where error.cause is HTTPBodyTooLarge {
            let large = error.cause as? HTTPBodyTooLarge
            let limit = large?.limit ?? 0
            throw BuckiaError(
                .invalidConfiguration,
                "\(HTTPRedaction.default.redact(url)) " + (large?.declared.map { "declared \($0) bytes" } ?? "sent more than \(limit) bytes")
                    + ", more than the \(limit) one resource may take in this cache (maxResourceBytes, else maxBytes): the download was stopped and nothing was kept. Raise the limit to fetch it.",
                operation: "fetch", path: location.text, cause: large)
        } catch let error as BuckiaError where error.code != .cancelled {
            if let cached, let stale = staleOnError(cached) { return stale }
            throw error
        }
        let responseTime = now()
        let shownURL = HTTPRedaction.default.redact(url)
        if response.status == 304 {
            guard let cached else {
                throw BuckiaError(
                    .corrupt, "\(shownURL) answered 304 Not Modified to a request that named no cached copy (no If-None-Match or If-Modified-Since); there is nothing to serve. The origin or a proxy in front of it is misbehaving.",
                    operation: "fetch", path: location.text)
            }
            // A 304 carries the headers that changed; the rest stay as stored.
            let merged = describe(response, requestTime: requestTime, responseTime: responseTime, over: cached.response)
            _ = try await onDisk { try $0.updateResponse(merged, for: location) }
            return Fetched(data: cached.data, file: cached.file, outcome: .revalidated, response: merged)
        }
        guard response.status != 206 else {
            // No range was asked for: a part is not the resource, and stored it would be served
            // as the whole.
            throw BuckiaError(
                .corrupt, "\(shownURL) answered 206 Partial Content (Content-Range \((response.header("Content-Range") ?? "none").debugDescription)) to a request for the whole resource; nothing was cached.",
                operation: "fetch", path: location.text)
        }
        let description = describe(response, requestTime: requestTime, responseTime: responseTime, over: nil)
        let noStore = CacheControl(response.header("Cache-Control")).noStore
        let (length, shown) = (response.contentLength, shownURL)
        // Read back, checked and stored in one hop to the blocking-work threads.
        let (data, stored) = try await onDisk { cache -> (Data, CachedResource?) in
            let data = try Data(contentsOf: temporary)
            if let length, length != Int64(data.count) {
                throw BuckiaError(.corrupt, "\(shown) sent \(data.count) bytes where its Content-Length said \(length); nothing was cached.", operation: "fetch")
            }
            // no-store: never written; an older entry goes.
            if noStore {
                _ = try cache.remove(location)
                return (data, nil)
            }
            return (data, try cache.storeDownloaded(temporary, data: data, for: location, response: description))
        }
        guard let stored else { return Fetched(data: data, file: nil, outcome: .downloaded, response: description) }
        return Fetched(data: stored.data, file: stored.file, outcome: .downloaded, response: description)
    }

    func read(_ name: String, _ path: String, location: ResourceLocation) async throws -> Fetched {
        let provider = try remote(name)
        let data = try await provider.readData(remotePath: path)
        let stored = try await onDisk { try $0.store(data, for: location, response: CachedResponse(receivedAt: self.now())) }
        return Fetched(data: stored.data, file: stored.file, outcome: .downloaded, response: stored.response)
    }

    /// What is kept of a response: validators, Cache-Control, Content-Type, freshness.
    func describe(_ response: HTTPResponse, requestTime: Date, responseTime: Date, over previous: CachedResponse?) -> CachedResponse {
        func value(_ name: String, _ old: String?) -> String? { response.header(name) ?? old }
        let cacheControl = value("Cache-Control", previous?.cacheControl)
        let expires = response.header("Expires")
        let lastModified = value("Last-Modified", previous?.lastModified)
        let freshUntil = HTTPFreshness.freshUntil(
            cacheControl: CacheControl(cacheControl), date: response.header("Date"), expires: expires, lastModified: lastModified, age: response.header("Age"),
            requestTime: requestTime, responseTime: responseTime)
        return CachedResponse(
            etag: value("ETag", previous?.etag), lastModified: lastModified, cacheControl: cacheControl,
            contentType: value("Content-Type", previous?.contentType), freshUntil: freshUntil, receivedAt: responseTime)
    }

    /// The cached resource when the origin failed and `stale-if-error` allows serving it.
    func staleOnError(_ cached: CachedResource) -> Fetched? {
        let control = CacheControl(cached.response.cacheControl)
        guard !control.mustRevalidate, let window = control.staleIfError else { return nil }
        let base = cached.response.freshUntil ?? cached.storedAt
        guard now() < base.addingTimeInterval(TimeInterval(window)) else { return nil }
        return Fetched(data: cached.data, file: cached.file, outcome: .stale, response: cached.response)
    }
}

/// One download in progress, and the fetches waiting for it.
final class Flight: Sendable {
    /// Thrown to a fetch that joined a flight as its last waiter cancelled it: the fetch
    /// starts a new one.
    struct Abandoned: Error {}

    private struct State {
        var waiters: [UUID: CheckedContinuation<ResourceDownloader.Fetched, any Error>] = [:]
        var progress: [UUID: @Sendable (Int64) -> Void] = [:]
        var cancelled: Set<UUID> = []
        var result: Result<ResourceDownloader.Fetched, any Error>?
        var received: Int64 = 0
        var abandoned = false
        var task: Task<Void, Never>?
        var cancelRequested = false
    }

    private let state = Locked(State())

    /// Fetches waiting on it now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Adds the bytes the transfer reports to the total, and tells every waiter.
    var observer: TransferObserver {
        TransferObserver { [state] bytes in
            let (total, listeners) = state.withLock { state -> (Int64, [@Sendable (Int64) -> Void]) in
                state.received &+= bytes
                return (state.received, Array(state.progress.values))
            }
            for listener in listeners { listener(total) }
        }
    }

    /// Runs the download in a task of its own (which ``cancel()`` cancels, even one asked for
    /// before the task existed).
    func start(_ work: @escaping @Sendable () async -> Void) {
        let task = Task { await work() }
        let cancelled = state.withLock { state in
            state.task = task
            return state.cancelRequested
        }
        if cancelled { task.cancel() }
    }

    /// Cancels the download.
    func cancel() {
        state.withLock { state in
            state.cancelRequested = true
            return state.task
        }?.cancel()
    }

    /// Waits for the download. Cancelling the waiting task ends this wait; when no other
    /// waiter is left and the download has not finished, `abandon` runs (it cancels it).
    ///
    /// - Throws: ``Abandoned`` when the flight was abandoned before this wait began.
    func wait(progress: (@Sendable (Int64) -> Void)?, abandon: @escaping @Sendable () -> Void) async throws -> ResourceDownloader.Fetched {
        let id = UUID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<ResourceDownloader.Fetched, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if let result = state.result { return result }
                    if state.abandoned { return .failure(Abandoned()) }
                    state.waiters[id] = continuation
                    if let progress { state.progress[id] = progress }
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let (waiter, last) = state.withLock { state -> (CheckedContinuation<ResourceDownloader.Fetched, any Error>?, Bool) in
                state.progress.removeValue(forKey: id)
                if let waiter = state.waiters.removeValue(forKey: id) {
                    let last = state.waiters.isEmpty && state.result == nil
                    if last { state.abandoned = true }
                    return (waiter, last)
                }
                if state.result == nil { state.cancelled.insert(id) }
                return (nil, false)
            }
            waiter?.resume(throwing: CancellationError())
            if last { abandon() }
        }
    }

    func finish(_ result: Result<ResourceDownloader.Fetched, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<ResourceDownloader.Fetched, any Error>] in
            state.result = result
            state.progress.removeAll()
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result) }
    }
}

/// At most `limit` downloads at once; the rest wait their turn, in order.
final class DownloadSlots: Sendable {
    private struct State {
        var free: Int
        var queue: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Locked<State>

    init(_ limit: Int) {
        state = Locked(State(free: limit))
    }

    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await withCheckedContinuation { continuation in
            let granted = state.withLock { state -> Bool in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.queue.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
        defer {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if state.queue.isEmpty {
                    state.free += 1
                    return nil
                }
                return state.queue.removeFirst()
            }
            next?.resume()
        }
        return try await body()
    }
}

/// An exclusive advisory lock (`flock`) held across an entry's download, on one of
/// ``stripes`` lock files chosen by the entry's key. The files stay (removing one while
/// another process waits on it would let a third take a fresh one, and two would download),
/// so there are never more than ``stripes`` of them. Two entries sharing a file download one
/// after the other, whichever processes fetch them.
final class EntryLock: Sendable {
    /// How many lock files a cache folder may have: with four downloads at once, two share a
    /// file about once in a thousand.
    static let stripes = 4096

    let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Takes the lock of `key` in `folder`: at once when no one holds it, else asking again
    /// after a wait that grows from 1 ms to 50 ms (as SQLite's busy handler does), so a wait on
    /// another process's download holds no thread and ends as soon as its task is cancelled.
    ///
    /// - Throws: ``BuckiaError/Code/cancelled`` when the task is cancelled while it waits; the
    ///   system's error when the lock file cannot be opened or locked.
    static func acquire(folder: URL, key: String) async throws -> EntryLock {
        // The first three hex digits of the key's SHA-256: one of 4,096 files.
        let path = folder.appendingPathComponent(String(Hashing.sha256Hex(Data(key.utf8)).prefix(3)) + ".lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw BuckiaError.posix(errno, operation: "lock cache entry", path: path) }
        var wait = Duration.milliseconds(1)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                let code = errno
                close(descriptor)
                throw BuckiaError.posix(code, operation: "lock cache entry", path: path)
            }
            do {
                try await Task.sleep(for: wait)
            } catch {
                close(descriptor)
                throw BuckiaError(.cancelled, "The wait for another download of the entry was cancelled.", operation: "lock cache entry", path: path)
            }
            wait = Swift.min(wait * 2, .milliseconds(50))
        }
        return EntryLock(descriptor: descriptor)
    }

    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
