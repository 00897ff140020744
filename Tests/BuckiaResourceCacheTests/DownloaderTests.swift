import BuckiaCore
import BuckiaHTTP
@testable import BuckiaResourceCache
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The scripted origin (`Resources/origin_server.py`), one per test, on 127.0.0.1.
final class Origin: Sendable {
    let server: Spawned
    let port: Int
    let client = HTTPClient()

    init() throws {
        guard let script = Bundle.module.url(forResource: "origin_server", withExtension: "py", subdirectory: "Resources") else {
            throw BuckiaError(.notFound, "origin_server.py is not among the test resources")
        }
        (server, port) = try PythonProcess.startServer(script: script, arguments: [])
    }

    deinit { server.stop() }

    func url(_ id: String) throws -> URL { try #require(URL(string: "http://127.0.0.1:\(port)/r/\(id)")) }
    func location(_ id: String) throws -> ResourceLocation { .url(try url(id)) }

    /// Sets what `/r/<id>` answers.
    func set(_ id: String, _ settings: [String: Any]) async throws {
        let body = try JSONSerialization.data(withJSONObject: settings)
        _ = try await client.send(HTTPRequest(.put, try #require(URL(string: "http://127.0.0.1:\(port)/set/\(id)")), body: .data(body)))
    }

    struct Counts: Decodable, Equatable {
        var full: Int
        var not_modified: Int
        var errors: Int
    }

    func counts(_ id: String) async throws -> Counts {
        let response = try await client.send(HTTPRequest(.get, try #require(URL(string: "http://127.0.0.1:\(port)/count/\(id)"))))
        return try JSONDecoder().decode(Counts.self, from: response.data)
    }

    /// Lets the bodies `/r/<id>`'s gate holds go on.
    func release(_ id: String) async throws {
        _ = try await client.send(HTTPRequest(.get, try #require(URL(string: "http://127.0.0.1:\(port)/release/\(id)"))))
    }

    /// Waits (at the server, at most 60 s) until `/r/<id>` has answered this often.
    func await(_ id: String, full: Int = 0, notModified: Int = 0) async throws -> Counts {
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/await/\(id)?full=\(full)&not_modified=\(notModified)"))
        return try JSONDecoder().decode(Counts.self, from: try await client.send(HTTPRequest(.get, url, timeout: .seconds(660))).data)
    }
}

@Suite("HTTP freshness (RFC 9111)")
struct FreshnessTests {
    static let received = Date(timeIntervalSince1970: 1_800_000_000)
    static func date(_ offset: TimeInterval) -> String { HTTPDate.format(received.addingTimeInterval(offset)) }

    /// Headers, and how long the response stays fresh (nil: never).
    static let cases: [(String?, String?, String?, String?, TimeInterval?)] = [
        // cache-control, expires, last-modified, age, → lifetime left
        ("max-age=100", nil, nil, nil, 100),
        ("max-age=100", nil, nil, "30", 70),
        ("max-age=100", date(1000), nil, nil, 100),  // max-age wins over Expires
        (nil, date(600), nil, nil, 600),
        (nil, "0", nil, nil, nil),  // an invalid Expires: already expired
        (nil, nil, date(-10 * 3600), nil, 3600),  // a tenth of ten hours
        (nil, nil, date(-100 * 24 * 3600), nil, 24 * 3600),  // capped at a day
        ("no-cache, max-age=100", nil, nil, nil, nil),
        ("max-age=abc", nil, nil, nil, nil),
        ("MAX-AGE=\"50\", must-revalidate", nil, nil, nil, 50),
        (nil, nil, nil, nil, nil),
        ("max-age=100", nil, nil, "500", nil),  // older than its lifetime on arrival
    ]

    @Test("Freshness lifetime from max-age, Expires, Age and the Last-Modified heuristic", arguments: cases.indices)
    func lifetimes(_ index: Int) {
        let (control, expires, modified, age, expected) = Self.cases[index]
        let until = HTTPFreshness.freshUntil(
            cacheControl: CacheControl(control), date: Self.date(0), expires: expires, lastModified: modified, age: age, requestTime: Self.received,
            responseTime: Self.received)
        #expect(until.map { $0.timeIntervalSince(Self.received) } == expected, "\(Self.cases[index])")
    }

    @Test("Cache-Control directives, any case, quoted or not; unknown ones ignored")
    func directives() {
        let control = CacheControl("No-Store, NO-CACHE, must-revalidate, stale-while-revalidate=30, stale-if-error=\"600\", private, x-custom=1")
        #expect(control.noStore && control.noCache && control.mustRevalidate)
        #expect(control.staleWhileRevalidate == 30 && control.staleIfError == 600 && control.maxAge == nil)
    }

    @Test("HTTP dates: IMF-fixdate read and written; other forms refused", arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777.0), ("Sunday, 06-Nov-94 08:49:37 GMT", nil), ("Sun Nov  6 08:49:37 1994", nil),
        ("Sun, 32 Nov 1994 08:49:37 GMT", nil), ("", nil),
    ] as [(String, Double?)])
    func dates(_ text: String, _ seconds: Double?) {
        #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == seconds)
        if let seconds { #expect(HTTPDate.format(Date(timeIntervalSince1970: seconds)) == text) }
    }
}

/// One test at a time: the 1,000-fetch test beside the ones that hold a body at a gate made
/// all of them wait on one another's downloads in a full run on two cores (three exceeded a
/// two-minute limit while it ran for 320 s).
@Suite("Resource downloader against a scripted origin", .serialized)
struct DownloaderTests {
    static func downloader(_ fixture: CacheFixture) -> ResourceDownloader {
        let clock = fixture.clock
        // Failures are retried once, without waiting: the tests are about caching, not backoff.
        var configuration = HTTPClient.Configuration()
        configuration.retryPolicy.maxAttempts = 2
        configuration.retryPolicy.sleep = { _ in }
        return ResourceDownloader(cache: fixture.cache, client: HTTPClient(configuration: configuration), clock: { clock.withLock { $0 } })
    }

    @Test("Fresh: served from the cache; stale: a conditional request, and a 304's new Cache-Control refreshes it")
    func freshThenRevalidated() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture()
        let fetcher = Self.downloader(fixture)
        try await origin.set("a", ["cache_control": "max-age=60", "cache_control_304": "max-age=1000", "size": 5000])
        let first = try await fetcher.fetch(origin.location("a"))
        #expect(first.outcome == .downloaded && first.data.count == 5000 && first.response.etag == "\"v1\"")
        #expect(try await fetcher.fetch(origin.location("a")).outcome == .hit)
        fixture.advance(120)
        let second = try await fetcher.fetch(origin.location("a"))
        #expect(second.outcome == .revalidated && second.data == first.data)
        fixture.advance(500)
        #expect(try await fetcher.fetch(origin.location("a")).outcome == .hit, "the 304's max-age=1000 was not kept")
        #expect(try await origin.counts("a") == Origin.Counts(full: 1, not_modified: 1, errors: 0))
        // A new version at the same URL: the conditional request gets it whole.
        try await origin.set("a", ["cache_control": "max-age=60", "version": 2, "size": 5000])
        fixture.advance(2000)
        let third = try await fetcher.fetch(origin.location("a"))
        #expect(third.outcome == .downloaded && third.data != first.data && third.response.etag == "\"v2\"")
    }

    @Test("no-store is never cached; no-cache asks before every use")
    func noStoreNoCache() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture()
        let fetcher = Self.downloader(fixture)
        try await origin.set("s", ["cache_control": "no-store"])
        try await origin.set("c", ["cache_control": "no-cache, max-age=600"])
        for _ in 0..<2 {
            let stored = try await fetcher.fetch(origin.location("s"))
            #expect(stored.outcome == .downloaded && stored.file == nil)
        }
        #expect(try await fetcher.fetch(origin.location("c")).outcome == .downloaded)
        #expect(try await fetcher.fetch(origin.location("c")).outcome == .revalidated)
        #expect(try await origin.counts("s").full == 2)
        #expect(try await origin.counts("c") == Origin.Counts(full: 1, not_modified: 1, errors: 0))
        #expect(try fixture.cache.statistics().entries == 1)
    }

    @Test("stale-if-error serves the stale copy while the origin fails, within its window only; must-revalidate never")
    func staleIfError() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture()
        let fetcher = Self.downloader(fixture)
        try await origin.set("e", ["cache_control": "max-age=10, stale-if-error=100"])
        try await origin.set("m", ["cache_control": "max-age=10, stale-if-error=100, must-revalidate"])
        let original = try await fetcher.fetch(origin.location("e"))
        _ = try await fetcher.fetch(origin.location("m"))
        try await origin.set("e", ["cache_control": "max-age=10, stale-if-error=100", "status": 503])
        try await origin.set("m", ["status": 503])
        fixture.advance(50)
        let stale = try await fetcher.fetch(origin.location("e"))
        #expect(stale.outcome == .stale && stale.data == original.data)
        await #expect(throws: BuckiaError.self) { try await fetcher.fetch(origin.location("m")) }
        fixture.advance(100)
        await #expect(throws: BuckiaError.self) { try await fetcher.fetch(origin.location("e")) }
    }

    @Test("stale-while-revalidate serves the stale copy at once and asks the origin once behind it")
    func staleWhileRevalidate() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture()
        let fetcher = Self.downloader(fixture)
        try await origin.set("w", ["cache_control": "max-age=10, stale-while-revalidate=100"])
        _ = try await fetcher.fetch(origin.location("w"))
        fixture.advance(30)
        #expect(try await fetcher.fetch(origin.location("w")).outcome == .stale)
        #expect(try await origin.await("w", full: 1, notModified: 1) == Origin.Counts(full: 1, not_modified: 1, errors: 0))
    }

    @Test("A body shorter than its Content-Length is an error and is not cached")
    func shortBody() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture()
        let fetcher = Self.downloader(fixture)
        try await origin.set("l", ["lie": true, "size": 1000, "cache_control": "max-age=600"])
        await #expect(throws: BuckiaError.self) { try await fetcher.fetch(origin.location("l")) }
        #expect(try fixture.cache.statistics().entries == 0)
    }

    @Test("1,000 concurrent fetches over 100 URLs cause 100 downloads; a second round none while fresh, then 100 answered 304", .timeLimit(.minutes(15)))
    func coalescing() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture { $0.maxConcurrentDownloads = 8 }
        let fetcher = Self.downloader(fixture)
        for n in 0..<100 { try await origin.set("c\(n)", ["cache_control": "max-age=60", "delay": 0.05, "size": 2000]) }
        let locations = try (0..<100).map { try origin.location("c\($0)") }
        func round() async throws -> [ResourceDownloader.Outcome: Int] {
            try await withThrowingTaskGroup(of: ResourceDownloader.Outcome.self) { group in
                for request in 0..<1000 {
                    let location = locations[request % 100]
                    group.addTask {
                        let fetched = try await fetcher.fetch(location)
                        guard fetched.data.count == 2000 else { throw BuckiaError(.corrupt, "short data for \(location)") }
                        return fetched.outcome
                    }
                }
                var outcomes: [ResourceDownloader.Outcome: Int] = [:]
                for try await outcome in group { outcomes[outcome, default: 0] += 1 }
                return outcomes
            }
        }
        _ = try await round()
        var full = 0
        for n in 0..<100 { full += try await origin.counts("c\(n)").full }
        #expect(full == 100)
        let fresh = try await round()
        #expect(fresh == [.hit: 1000])
        fixture.advance(120)
        _ = try await round()
        var notModified = 0
        full = 0
        for n in 0..<100 {
            let counts = try await origin.counts("c\(n)")
            notModified += counts.not_modified
            full += counts.full
        }
        #expect(full == 100 && notModified == 100)
    }

    /// Waits until `count` fetches wait on `location`'s download (at most a minute): the
    /// event is another task's, with nothing to await but the count.
    static func untilWaiting(_ fetcher: ResourceDownloader, _ location: ResourceLocation, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try fetcher.waiters(location) < count {
            guard ContinuousClock.now < deadline else { throw BuckiaError(.transient, "\(count) fetches never waited on \(location) within a minute") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    @Test("Cancelling one of two waiters ends its wait only; the download completes for the other", .timeLimit(.minutes(15)))
    func cancellingOneWaiter() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture()
        let fetcher = Self.downloader(fixture)
        // Half the body, then held until the test lets it go.
        try await origin.set("x", ["cache_control": "max-age=60", "size": 10_000, "gate": true])
        let location = try origin.location("x")
        let first = Task { try await fetcher.fetch(location) }
        let second = Task { try await fetcher.fetch(location) }
        try await Self.untilWaiting(fetcher, location, 2)
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        try await origin.release("x")
        let fetched = try await second.value
        #expect(fetched.outcome == .downloaded)
        #expect(try await origin.counts("x").full == 1)
        #expect(try await fetcher.fetch(location).outcome == .hit)
    }

    @Test("A clock moved backwards does not stretch freshness: an entry received 'in the future' is revalidated, not served")
    func clockBackwards() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture()
        let fetcher = Self.downloader(fixture)
        try await origin.set("t", ["cache_control": "max-age=600"])
        let location = try origin.location("t")
        #expect(try await fetcher.fetch(location).outcome == .downloaded)
        fixture.advance(-3600)
        #expect(try await fetcher.fetch(location).outcome == .revalidated)
        // Confirmed at the new time, it is fresh again from there.
        #expect(try await fetcher.fetch(location).outcome == .hit)
        #expect(try await origin.counts("t") == Origin.Counts(full: 1, not_modified: 1, errors: 0))
    }

    @Test("Cancelling the only fetch waiting cancels its download; the next fetch starts a new one", .timeLimit(.minutes(15)))
    func cancellingTheLastWaiter() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture()
        let fetcher = Self.downloader(fixture)
        // Half the body, then nothing for a minute: the download cannot finish before the
        // cancel, however loaded the machine.
        try await origin.set("y", ["cache_control": "max-age=60", "size": 100_000, "stall": 60])
        let location = try origin.location("y")
        let only = Task { try await fetcher.fetch(location) }
        _ = try await origin.await("y", full: 1)
        only.cancel()
        await #expect(throws: CancellationError.self) { try await only.value }
        #expect(try fixture.cache.lookup(location) == nil)
        try await origin.set("y", ["cache_control": "max-age=60", "size": 100_000])
        // Joined to the cancelled download, this would end with it, or share its one request
        // (full would stay 1). At least one more: one full CI run failed an `== 2` here
        // without saying the count (a retried attempt counts too); it is printed now.
        #expect(try await fetcher.fetch(location).outcome == .downloaded)
        let counts = try await origin.counts("y")
        #expect(counts.full >= 2, "\(counts)")
    }

    @Test("Progress: every fetch waiting on a download hears the bytes received, up to the whole resource", .timeLimit(.minutes(15)))
    func progress() async throws {
        let origin = try Origin()
        let fixture = try CacheFixture()
        let fetcher = Self.downloader(fixture)
        let size = 3 << 20
        // Half the body, then held until the test lets it go: the first fetch hears the half,
        // the second joins, and both hear the whole.
        try await origin.set("p", ["cache_control": "max-age=60", "size": size, "gate": true])
        let location = try origin.location("p")
        let heard = [Locked<[Int64]>([]), Locked<[Int64]>([])]
        func start(_ totals: Locked<[Int64]>) -> Task<ResourceDownloader.Fetched, any Error> {
            Task { try await fetcher.fetch(location) { total in totals.withLock { $0.append(total) } } }
        }
        let first = start(heard[0])
        let deadline = ContinuousClock.now + .seconds(60)
        while heard[0].withLock({ $0.isEmpty }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        let second = start(heard[1])
        try await Self.untilWaiting(fetcher, location, 2)
        try await origin.release("p")
        for fetch in [first, second] { #expect(try await fetch.value.data.count == size) }
        #expect(try await origin.counts("p").full == 1)
        let (early, late) = (heard[0].withLock { $0 }, heard[1].withLock { $0 })
        #expect(early.count > 1 && early.first.map { $0 < Int64(size) } == true, "the first fetch heard \(early)")
        for totals in [early, late] {
            #expect(totals.last == Int64(size) && totals == totals.sorted(), "heard \(totals.suffix(3)) of \(size) bytes")
        }
        // A hit hears nothing.
        let none = Locked(0)
        #expect(try await fetcher.fetch(location) { _ in none.withLock { $0 += 1 } }.outcome == .hit)
        #expect(none.withLock { $0 } == 0)
    }
}

/// The lock one download of an entry holds across processes (`flock` on a stripe file).
@Suite("Entry locks")
struct EntryLockTests {
    @Test("A wait for a held entry lock ends as cancelled when its task is cancelled", .timeLimit(.minutes(10)))
    func waitCancels() async throws {
        let folder = try TestFolder.make("entry-lock")
        defer { TestFolder.remove(folder) }
        let held = try await EntryLock.acquire(folder: folder, key: "photo")
        let waiter = Task { try await EntryLock.acquire(folder: folder, key: "photo") }
        waiter.cancel()
        // Held the whole time: only the cancellation can end the wait.
        let error = await #expect(throws: BuckiaError.self) { _ = try await waiter.value }
        #expect(error?.code == .cancelled)
        held.release()
        try await EntryLock.acquire(folder: folder, key: "photo").release()
    }

    @Test("A waiter takes the entry lock once its holder lets go", .timeLimit(.minutes(10)))
    func waiterTakesOver() async throws {
        let folder = try TestFolder.make("entry-lock")
        defer { TestFolder.remove(folder) }
        let held = try await EntryLock.acquire(folder: folder, key: "photo")
        let waiter = Task { try await EntryLock.acquire(folder: folder, key: "photo") }
        held.release()
        try await waiter.value.release()
    }
}
