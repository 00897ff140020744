import BuckiaCore
import BuckiaResourceCache
import BuckiaTestSupport
import Foundation
import Testing

/// Recency and read counts as the index keeps them. Each eviction policy's properties over
/// random workloads (never over a limit after a trim, unless pinned entries alone are; the
/// victims the unpinned entries with the lowest scores, in the policy's order, no more than
/// needed; pinned entries stay) are conformance scenarios now, run for every built-in policy
/// by `ResourceCacheConformanceTests` and for a third party's by its own tests.
@Suite("Eviction: recency and reads")
struct EvictionPropertyTests {
    @Test("LRU goes by the order of use, not the clock: an entry read after the clock moved back, in another opener, is kept")
    func recencyIgnoresTheClock() throws {
        let fixture = try CacheFixture {
            $0.maxCount = 3
            $0.memoryBytes = 0
        }
        let locations = try ["a", "b", "c", "d"].map { try CacheFixture.url("https://x.example/\($0)") }
        for location in locations.prefix(3) {
            try fixture.cache.store(Data("bytes".utf8), for: location)
            fixture.advance(60)
        }
        // A second opener of the folder (another process) whose clock is a day behind reads a.
        let behind = try ResourceCache(folder: fixture.folder, configuration: fixture.cache.configuration, clock: { Date(timeIntervalSince1970: 1_700_000_000) })
        #expect(try behind.lookup(locations[0]) != nil)
        _ = try behind.statistics()  // its reads written to the index
        try fixture.cache.store(Data("bytes".utf8), for: locations[3])
        #expect(try fixture.cache.lookup(locations[1]) == nil, "b, used least recently, should have gone")
        #expect(try fixture.cache.lookup(locations[0]) != nil, "a, read last (by a clock a day behind), was evicted")
    }

    @Test("Reads are recorded in batches, and none is lost when the cache is released: LFU keeps the entry read most")
    func hitsSurviveRelease() throws {
        let fixture = try CacheFixture {
            $0.evictionPolicy = LFUEvictionPolicy()
            $0.memoryBytes = 0
        }
        let (a, b) = (try CacheFixture.url("https://x.example/a"), try CacheFixture.url("https://x.example/b"))
        try fixture.cache.store(Data("a".utf8), for: a)
        try fixture.cache.store(Data("b".utf8), for: b)
        for _ in 0..<3 { _ = try fixture.cache.lookup(a) }
        _ = try fixture.cache.lookup(b)
        var configuration = fixture.cache.configuration
        fixture.cache = try ResourceCache(folder: fixture.folder, configuration: configuration)  // the first is released
        configuration.maxCount = 1
        let evicted = try ResourceCache(folder: fixture.folder, configuration: configuration).trim()
        #expect(evicted.map(\.hits) == [1], "evicted \(evicted)")
        #expect(try fixture.cache.lookup(a) != nil)
    }
}
