import BuckiaCore
import BuckiaResourceCache
import BuckiaTestSupport
import Foundation
import Testing

/// Each eviction policy as properties over random workloads: never over a limit after a trim
/// (unless pinned entries alone are); the victims are the unpinned entries with the lowest
/// scores, taken in the policy's order, and no more than needed; pinned entries stay.
@Suite("Eviction policies, as properties over random workloads")
struct EvictionPropertyTests {
    static let policies: [any CacheEvictionPolicy] = [
        LRUEvictionPolicy(), LFUEvictionPolicy(), LargestFirstEvictionPolicy(), OldestFirstEvictionPolicy(), PriorityEvictionPolicy(),
        CustomEvictionPolicy(name: "smallest-first") { entry, _ in Double(entry.size) },
    ]

    static func randomEntries(_ random: inout SplitMix64) -> [CacheEntryInfo] {
        (0..<Int.random(in: 0...60, using: &random)).map { n in
            let stored = Double(Int.random(in: 1_700_000_000...1_800_000_000, using: &random))
            return CacheEntryInfo(
                key: "k\(n)", size: Int64.random(in: 0...10_000, using: &random), storedAt: Date(timeIntervalSince1970: stored),
                lastAccess: Date(timeIntervalSince1970: stored + Double(Int.random(in: -1000...100_000, using: &random))),  // the clock may have gone back
                hits: Int64.random(in: 0...20, using: &random), priority: Int.random(in: -2...2, using: &random),
                pinned: Int.random(in: 0..<8, using: &random) == 0, accessOrder: Int64.random(in: 0...1_000, using: &random))
        }
    }

    @Test("victims: within the limits afterwards, lowest scores first, minimal, never pinned (500 random cases each)", arguments: policies.indices)
    func victimsProperties(_ index: Int) throws {
        let policy = Self.policies[index]
        var random = SplitMix64(seed: 0xB0C1A + UInt64(index))
        let now = Date(timeIntervalSince1970: 1_800_100_000)
        var trimmed = 0
        for round in 0..<500 {
            let entries = Self.randomEntries(&random)
            let maxBytes: Int64? = Int.random(in: 0..<3, using: &random) == 0 ? nil : Int64.random(in: 0...300_000, using: &random)
            let maxCount: Int? = Int.random(in: 0..<3, using: &random) == 0 ? nil : Int.random(in: 0...60, using: &random)
            let victims = policy.victims(entries, maxBytes: maxBytes, maxCount: maxCount, now: now)
            let gone = Set(victims.map(\.key))
            let kept = entries.filter { !gone.contains($0.key) }
            let bytes = kept.reduce(Int64(0)) { $0 + $1.size }
            let pinnedBytes = entries.filter(\.pinned).reduce(Int64(0)) { $0 + $1.size }
            let pinnedCount = entries.filter(\.pinned).count
            func within(_ bytes: Int64, _ count: Int) -> Bool { (maxBytes.map { bytes <= $0 } ?? true) && (maxCount.map { count <= $0 } ?? true) }
            let context = "\(policy.name), round \(round)"
            #expect(victims.allSatisfy { !$0.pinned }, "\(context): a pinned entry was chosen")
            #expect(gone.count == victims.count, "\(context): an entry was chosen twice")
            if within(pinnedBytes, pinnedCount) {
                #expect(within(bytes, kept.count), "\(context): still over the limits")
            } else {
                #expect(kept.allSatisfy { $0.pinned }, "\(context): over the limits with pinned entries alone, yet unpinned ones stayed")
            }
            // The policy's order: by score, ties the least recently used first.
            func precedes(_ a: CacheEntryInfo, _ b: CacheEntryInfo) -> Bool {
                let (x, y) = (policy.score(a, now: now), policy.score(b, now: now))
                return x != y ? x < y : a.accessOrder <= b.accessOrder
            }
            #expect(zip(victims, victims.dropFirst()).allSatisfy { precedes($0, $1) }, "\(context): victims not in the policy's order")
            let scores = victims.map { policy.score($0, now: now) }
            if let highest = scores.last, let last = victims.last {
                let lowestKept = kept.filter { !$0.pinned }.map { policy.score($0, now: now) }.min() ?? .infinity
                #expect(highest <= lowestKept, "\(context): an entry scoring \(lowestKept) stayed while one scoring \(highest) went")
                for entry in kept where !entry.pinned && policy.score(entry, now: now) == highest {
                    #expect(entry.accessOrder >= last.accessOrder, "\(context): of two scoring \(highest), the more recently used went")
                }
                // Minimal: without the last victim the cache would still be over a limit.
                #expect(!within(bytes + last.size, kept.count + 1), "\(context): evicted one more than needed")
                trimmed += 1
            }
        }
        #expect(trimmed > 100, "only \(trimmed) of 500 random cases had anything to evict: the workload does not exercise the policy")
    }

    @Test("A cache under a random workload of stores, reads, pins and a clock that also goes back stays within its limits", arguments: policies.indices)
    func cacheWorkload(_ index: Int) throws {
        let policy = Self.policies[index]
        var random = SplitMix64(seed: 0xCAC4E + UInt64(index))
        let fixture = try CacheFixture {
            $0.evictionPolicy = policy
            $0.maxBytes = 40_000
            $0.maxCount = 12
            $0.memoryBytes = 8_000
        }
        var pinned = Set<String>()
        var evictions = 0
        for step in 0..<300 {
            let location = try CacheFixture.url("https://x.example/r\(Int.random(in: 0..<40, using: &random))")
            fixture.advance(Double(Int.random(in: -30...600, using: &random)))
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                let before = try fixture.cache.statistics().entries
                try fixture.cache.store(Data(repeating: UInt8(step % 256), count: Int.random(in: 1...6_000, using: &random)), for: location)
                if try fixture.cache.statistics().entries <= before { evictions += 1 }
            case 5..<9:
                if let found = try fixture.cache.lookup(location) { #expect(found.data.allSatisfy { $0 == found.data.first }, "wrong bytes for \(location)") }
            default:
                if pinned.count < 3, try fixture.cache.pin(location) { pinned.insert(location.text) }
            }
            let statistics = try fixture.cache.statistics()
            #expect(statistics.bytes <= 40_000 && statistics.entries <= 12, "\(policy.name) step \(step): \(statistics)")
            #expect(statistics.memoryBytes <= 8_000)
        }
        for text in pinned {
            #expect(try fixture.cache.lookup(.url(try #require(URL(string: text)))) != nil, "pinned \(text) was evicted")
        }
        #expect(evictions > 10, "the workload evicted \(evictions) times: it does not exercise \(policy.name)")
    }

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
