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
    /// Concurrent fetches of one resource share one download; cancelling one of them stops
    /// only its own wait.
    public func fetch(_ location: ResourceLocation) async throws -> Fetched {
        let key = try cache.key(for: location)
        if let cached = try await onDisk({ try $0.lookup(location) }) {
            let stamp = now()
            if let fresh = cached.response.freshUntil, stamp < fresh {
                return Fetched(data: cached.data, file: cached.file, outcome: .hit, response: cached.response)
            }
            let control = CacheControl(cached.response.cacheControl)
            if !control.mustRevalidate, let window = control.staleWhileRevalidate, let fresh = cached.response.freshUntil,
                stamp < fresh.addingTimeInterval(TimeInterval(window))
            {
                // Served now; the refresh runs behind it, shared with any other.
                _ = flightFor(key) { try await self.refresh(location, key: key) }
                return Fetched(data: cached.data, file: cached.file, outcome: .stale, response: cached.response)
            }
        }
        return try await flightFor(key) { try await self.refresh(location, key: key) }.wait()
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
            Task {
                let result: Result<Fetched, any Error>
                do {
                    result = .success(try await work())
                } catch {
                    result = .failure(error)
                }
                flights.withLock { _ = $0.removeValue(forKey: key) }
                flight.finish(result)
            }
        }
        return flight
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
            if let cached, let fresh = cached.response.freshUntil, self.now() < fresh {
                return Fetched(data: cached.data, file: cached.file, outcome: .hit, response: cached.response)
            }
            switch location {
            case .url(let url): return try await self.download(url, location: location, cached: cached)
            case .remote(let name, let path): return try await self.read(name, path, location: location)
            }
        }
    }

    func download(_ url: URL, location: ResourceLocation, cached: CachedResource?) async throws -> Fetched {
        guard url.scheme == "http" || url.scheme == "https" else {
            throw BuckiaError(.invalidConfiguration, "\(url.scheme ?? "no scheme") URLs are not fetched; give an http(s) URL or REMOTE:PATH.", operation: "fetch")
        }
        var headers = HTTPHeaders()
        if let cached {
            if let etag = cached.response.etag { headers.set("If-None-Match", etag) }
            if let modified = cached.response.lastModified { headers.set("If-Modified-Since", modified) }
        }
        let temporary = cache.temporaries.appendingPathComponent("download-\(UUID().uuidString)")
        defer { _ = unlink(temporary.path) }
        let requestTime = now()
        let response: HTTPResponse
        do {
            response = try await client.download(HTTPRequest(.get, url, headers: headers, accepts: .successfulAnd([304])), to: temporary)
        } catch let error as BuckiaError where error.code != .cancelled {
            if let cached, let stale = staleOnError(cached) { return stale }
            throw error
        }
        let responseTime = now()
        if response.status == 304, let cached {
            // A 304 carries the headers that changed; the rest stay as stored.
            let merged = describe(response, requestTime: requestTime, responseTime: responseTime, over: cached.response)
            _ = try await onDisk { try $0.updateResponse(merged, for: location) }
            return Fetched(data: cached.data, file: cached.file, outcome: .revalidated, response: merged)
        }
        let data = try await BlockingWork.run("read download") { try Data(contentsOf: temporary) }
        if let length = response.contentLength, length != Int64(data.count) {
            throw BuckiaError(
                .corrupt, "\(HTTPRedaction.default.redact(url)) sent \(data.count) bytes where its Content-Length said \(length); nothing was cached.",
                operation: "fetch")
        }
        let description = describe(response, requestTime: requestTime, responseTime: responseTime, over: nil)
        if CacheControl(response.header("Cache-Control")).noStore {
            _ = try await onDisk { try $0.remove(location) }
            return Fetched(data: data, file: nil, outcome: .downloaded, response: description)
        }
        let stored = try await onDisk { try $0.store(data, for: location, response: description) }
        return Fetched(data: stored.data, file: stored.file, outcome: .downloaded, response: description)
    }

    func read(_ name: String, _ path: String, location: ResourceLocation) async throws -> Fetched {
        let provider = try remote(name)
        let data = try await provider.readData(remotePath: path)
        let stored = try await onDisk { try $0.store(data, for: location, response: CachedResponse()) }
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
            contentType: value("Content-Type", previous?.contentType), freshUntil: freshUntil)
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
    private struct State {
        var waiters: [UUID: CheckedContinuation<ResourceDownloader.Fetched, any Error>] = [:]
        var cancelled: Set<UUID> = []
        var result: Result<ResourceDownloader.Fetched, any Error>?
    }

    private let state = Locked(State())

    /// Waits for the download; cancelling the waiting task ends this wait only.
    func wait() async throws -> ResourceDownloader.Fetched {
        let id = UUID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<ResourceDownloader.Fetched, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if let result = state.result { return result }
                    state.waiters[id] = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<ResourceDownloader.Fetched, any Error>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                if state.result == nil { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    func finish(_ result: Result<ResourceDownloader.Fetched, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<ResourceDownloader.Fetched, any Error>] in
            state.result = result
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

/// An exclusive advisory lock (`flock`) on one entry's lock file, held across a download. The
/// files stay: removing a lock file while another process waits on it would let a third take
/// a fresh one, and two would download.
final class EntryLock: Sendable {
    let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Takes the lock of `key` in `folder`: at once when no other process holds it, else
    /// waiting on a thread of its own (a wait on another process's download must not hold one
    /// of the few blocking-work threads, let alone the cooperative pool's).
    static func acquire(folder: URL, key: String) async throws -> EntryLock {
        let path = folder.appendingPathComponent(String(Hashing.sha256Hex(Data(key.utf8)).prefix(32)) + ".lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw BuckiaError.posix(errno, operation: "lock cache entry", path: path) }
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return EntryLock(descriptor: descriptor) }
        guard errno == EWOULDBLOCK || errno == EINTR else {
            let code = errno
            close(descriptor)
            throw BuckiaError.posix(code, operation: "lock cache entry", path: path)
        }
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                while flock(descriptor, LOCK_EX) != 0 {
                    guard errno == EINTR else {
                        let code = errno
                        close(descriptor)
                        continuation.resume(throwing: BuckiaError.posix(code, operation: "lock cache entry", path: path))
                        return
                    }
                }
                continuation.resume(returning: EntryLock(descriptor: descriptor))
            }
        }
    }

    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
