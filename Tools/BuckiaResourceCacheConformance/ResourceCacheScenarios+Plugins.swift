import BuckiaConformance
import BuckiaCore
import BuckiaMemory
import BuckiaResourceCache
import Foundation

extension ResourceCacheScenarios {
    // MARK: Metadata, transforms, processors, the downloader

    static let plugins: [ResourceCacheScenario] = [
        ResourceCacheScenario(
            "metadata: kept with its entry",
            contract: "Metadata is read back as saved, replaced whole, kept when the entry is stored again without any (at another size or day), and gone with the entry.", requires: [.metadata]
        ) { context in
            let cache = try context.open()
            let (location, other) = (try url("https://cdn.example/meta.png"), try url("https://cdn.example/plain.png"))
            let first = ["a": "1", "ü": "✓ two words", "empty": ""]
            _ = try store(cache, bytes(3_000, 0), location, metadata: first)
            _ = try store(cache, bytes(3_000, 1), other)
            try Expect.equal(try cache.metadata(for: location), first, "the metadata")
            try Expect.equal(try cache.metadata(for: other), nil, "the metadata of an entry stored without any")
            try Expect.equal(try context.open().metadata(for: location), first, "the metadata in another opener")
            _ = try store(cache, bytes(3_000, 2), location, metadata: ["b": "2"])
            try Expect.equal(try cache.metadata(for: location), ["b": "2"], "the metadata after storing new metadata")
            // A download that refreshes the bytes passes no metadata: what the app saved stays,
            // also when the entry's file moves (a size layout, a date layout a day later).
            _ = try store(cache, bytes(3_000, 3), location)
            try Expect.equal(try cache.metadata(for: location), ["b": "2"], "the metadata after storing the bytes again without metadata")
            context.advance(3 * 86_400)
            _ = try store(cache, bytes(1_200_000, 4), location)
            try Expect.equal(try cache.metadata(for: location), ["b": "2"], "the metadata after storing 1.2 MB three days later")
            try Expect.that(try cache.remove(location), "removing the entry said there was none")
            _ = try store(cache, bytes(3_000, 5), location)
            try Expect.equal(try cache.metadata(for: location), nil, "the metadata of a removed entry, stored again without any")
        },
        ResourceCacheScenario(
            "metadata: the provider on its own",
            contract: "A provider loads nil before any save, what was saved last (whole, never merged), nil after clear; clearing twice is fine; entries are independent.", requires: [.metadata]
        ) { context in
            guard let provider = context.configuration.metadataProvider else { throw ConformanceFailure("The configuration has no metadata provider.") }
            try FileManager.default.createDirectory(at: context.folder, withIntermediateDirectories: true)
            let (one, two) = (context.folder.appendingPathComponent("one.bin"), context.folder.appendingPathComponent("two.bin"))
            for file in [one, two] { try Data("bytes".utf8).write(to: file) }
            try Expect.equal(try provider.load(key: "k1", file: one), nil, "loading before any save")
            try provider.save(["a": "1", "b": "2"], key: "k1", file: one)
            try provider.save(["z": "9"], key: "k2", file: two)
            try Expect.equal(try provider.load(key: "k1", file: one), ["a": "1", "b": "2"], "the first save")
            try provider.save(["a": "3"], key: "k1", file: one)
            try Expect.equal(try provider.load(key: "k1", file: one), ["a": "3"], "a second save (replacing, not merging)")
            try provider.clear(key: "k1", file: one)
            try Expect.equal(try provider.load(key: "k1", file: one), nil, "loading after clear")
            try provider.clear(key: "k1", file: one)
            try Expect.equal(try provider.load(key: "k2", file: two), ["z": "9"], "another entry's metadata after clearing the first")
        },
        ResourceCacheScenario(
            "transform: decode undoes encode", contract: "decode(encode(x)) is x for empty, tiny, compressible and incompressible bytes, and the file extension is a plain short name."
        ) { context in
            let transform = context.configuration.transform
            let inputs = [Data(), Data([0]), Data(repeating: 0, count: 1_000), bytes(100 << 10, 0), bytes(300 << 10, 1), Data(repeating: 7, count: (2 << 20) + 3)]
            for input in inputs {
                let encoded = try transform.encode(input)
                try Expect.sameBytes(try transform.decode(encoded), input, "\(transform.name) round trip of \(input.count) bytes")
            }
            let suffix = transform.fileExtension
            try Expect.that(
                suffix.utf8.count <= 16 && !suffix.contains("/") && !suffix.contains(".") && !suffix.utf8.contains(0),
                "the file extension \(suffix.debugDescription) is not a plain name of at most 16 bytes")
            try Expect.that(!transform.name.isEmpty, "the transform has no name")
        },
        ResourceCacheScenario(
            "processor: its identity is in the key",
            contract: "Processed bytes and the original are separate entries: a cache without the processor never serves processed bytes, nor one with it the original.", requires: [.processing]
        ) { context in
            guard let processor = context.configuration.processor else { throw ConformanceFailure("The configuration has no processor.") }
            let candidates = try ["https://cdn.example/p.png", "https://cdn.example/p.jpg", "https://cdn.example/p.json", "https://cdn.example/p.txt"].map(url)
                + [ResourceLocation.remote(name: "media", path: "p.png")]
            guard let location = candidates.first(where: processor.shouldProcess) else {
                throw ConformanceSkip("the processor \(processor.id) takes none of \(candidates)")
            }
            try Expect.that(!processor.id.isEmpty, "the processor's id is empty")
            let original = bytes(20_000, 0)
            let processed = try processor.process(original, for: location)
            try Expect.sameBytes(try processor.process(original, for: location), processed, "processing the same bytes twice")
            try Expect.that(processed != original, "the processor \(processor.id) left \(location)'s bytes as they were: the scenario cannot tell the entries apart")
            let processing = try context.open()
            let plain = try context.open { $0.processor = nil }
            try Expect.that(try processing.key(for: location) != plain.key(for: location), "the key with and without \(processor.id) is the same")
            _ = try store(processing, original, location)
            try Expect.that(try plain.lookup(location) == nil, "a cache without the processor read the processed entry")
            _ = try store(plain, original, location)
            try Expect.sameBytes(try processing.lookup(location)?.data ?? Data(), processed, "the processed entry")
            try Expect.sameBytes(try plain.lookup(location)?.data ?? Data(), original, "the original entry")
        },
        ResourceCacheScenario(
            "downloader: remote resources through the configuration", contract: "Concurrent fetches of remote:path resources give the right bytes, one entry each."
        ) { context in
            let provider = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
            let paths = (0..<5).map { "media/\($0).png" }
            for (index, path) in paths.enumerated() { _ = try await provider.uploadData(bytes(40_000 + index, index), remotePath: path) }
            let downloader = ResourceDownloader(cache: try context.open(), remote: { _ in provider })
            let fetched = try await withThrowingTaskGroup(of: (Int, Data).self) { group in
                for round in 0..<20 {
                    let index = round % paths.count
                    group.addTask { (index, try await downloader.fetch(.remote(name: "media", path: paths[index])).data) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (index, data) in fetched {
                let location = ResourceLocation.remote(name: "media", path: paths[index])
                try Expect.sameBytes(data, try context.expected(bytes(40_000 + index, index), for: location), "a fetch of \(paths[index])")
            }
            try Expect.equal(try downloader.cache.statistics().entries, paths.count, "entries")
            try downloader.cache.close()
        },
    ]

    // MARK: Eviction

    static let eviction: [ResourceCacheScenario] = [
        ResourceCacheScenario(
            "eviction: victims follow the policy",
            contract: "Over 300 random entry sets the victims leave the cache within its limits, go lowest score first (ties least recently used), are no more than needed, and are never pinned."
        ) { context in
            let policy = context.configuration.evictionPolicy
            var random = SplitMix64(seed: 0xB0C1A)
            let now = Date(timeIntervalSince1970: 1_800_100_000)
            var trimmed = 0
            for round in 0..<300 {
                let entries = randomEntries(&random)
                let maxBytes: Int64? = Int.random(in: 0..<3, using: &random) == 0 ? nil : Int64.random(in: 0...300_000, using: &random)
                let maxCount: Int? = Int.random(in: 0..<3, using: &random) == 0 ? nil : Int.random(in: 0...60, using: &random)
                let victims = policy.victims(entries, maxBytes: maxBytes, maxCount: maxCount, now: now)
                try checkVictims(victims, of: entries, policy: policy, maxBytes: maxBytes, maxCount: maxCount, now: now, round: round)
                if !victims.isEmpty { trimmed += 1 }
            }
            try Expect.that(trimmed > 100, "only \(trimmed) of 300 random cases had anything to evict: the workload does not exercise the policy")
        },
        ResourceCacheScenario(
            "eviction: a random workload stays within the limits",
            contract: "Stores, reads and pins under a clock that also goes back keep the cache within its limits, pinned entries stay, and every read gives the bytes last stored."
        ) { context in
            var random = SplitMix64(seed: 0xCAC4E)
            let cache = try context.open { ($0.maxBytes, $0.maxCount, $0.memoryBytes) = (40_000, 12, 8_000) }
            var latest: [ResourceLocation: Data] = [:]
            var pinned: Set<ResourceLocation> = []
            var evictions = 0
            for step in 0..<240 {
                let location = try url("https://cdn.example/w/\(Int.random(in: 0..<40, using: &random))")
                context.advance(Double(Int.random(in: -30...600, using: &random)))
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5:
                    let before = try cache.statistics().entries
                    let data = Data(repeating: UInt8(step % 256), count: Int.random(in: 1...3_000, using: &random)) + bytes(Int.random(in: 0...3_000, using: &random), step)
                    _ = try store(cache, data, location)
                    latest[location] = data
                    if try cache.statistics().entries <= before { evictions += 1 }
                case 5..<9:
                    if let found = try cache.lookup(location), let data = latest[location] {
                        try Expect.sameBytes(found.data, try context.expected(data, for: location), "step \(step): \(location)")
                    }
                default:
                    if pinned.count < 3, try cache.pin(location) { pinned.insert(location) }
                }
                let statistics = try cache.statistics()
                try Expect.that(statistics.bytes <= 40_000 && statistics.entries <= 12, "step \(step): over the limits of 40,000 bytes and 12 entries: \(statistics)")
                try Expect.that(statistics.memoryBytes <= 8_000, "step \(step): the memory tier holds \(statistics.memoryBytes) bytes, over its 8,000")
            }
            for location in pinned { try Expect.that(try cache.lookup(location) != nil, "pinned \(location) was evicted") }
            try Expect.that(evictions > 10, "the workload evicted \(evictions) times: it does not exercise \(context.configuration.evictionPolicy.name)")
        },
    ]

    static func randomEntries(_ random: inout SplitMix64) -> [CacheEntryInfo] {
        (0..<Int.random(in: 0...60, using: &random)).map { n in
            let stored = Double(Int.random(in: 1_700_000_000...1_800_000_000, using: &random))
            return CacheEntryInfo(
                key: "k\(n)", size: Int64.random(in: 0...10_000, using: &random), storedAt: Date(timeIntervalSince1970: stored),
                lastAccess: Date(timeIntervalSince1970: stored + Double(Int.random(in: -1000...100_000, using: &random))),  // clocks go back
                hits: Int64.random(in: 0...20, using: &random), priority: Int.random(in: -2...2, using: &random),
                pinned: Int.random(in: 0..<8, using: &random) == 0, accessOrder: Int64.random(in: 0...1_000, using: &random))
        }
    }

    /// Throws unless `victims` are what the policy must choose from `entries`.
    static func checkVictims(
        _ victims: [CacheEntryInfo], of entries: [CacheEntryInfo], policy: any CacheEvictionPolicy, maxBytes: Int64?, maxCount: Int?, now: Date, round: Int
    ) throws {
        let gone = Set(victims.map(\.key))
        let kept = entries.filter { !gone.contains($0.key) }
        let bytes = kept.reduce(Int64(0)) { $0 + $1.size }
        let pinned = entries.filter(\.pinned)
        func within(_ bytes: Int64, _ count: Int) -> Bool { (maxBytes.map { bytes <= $0 } ?? true) && (maxCount.map { count <= $0 } ?? true) }
        let where_ = "\(policy.name), round \(round)"
        try Expect.that(victims.allSatisfy { !$0.pinned }, "\(where_): a pinned entry was chosen")
        try Expect.that(gone.count == victims.count, "\(where_): an entry was chosen twice")
        if within(pinned.reduce(Int64(0)) { $0 + $1.size }, pinned.count) {
            try Expect.that(within(bytes, kept.count), "\(where_): still over the limits")
        } else {
            try Expect.that(kept.allSatisfy(\.pinned), "\(where_): over the limits with pinned entries alone, yet unpinned ones stayed")
        }
        func score(_ entry: CacheEntryInfo) -> Double {
            let value = policy.score(entry, now: now)
            return value.isNaN ? -.infinity : value
        }
        for (a, b) in zip(victims, victims.dropFirst()) {
            let (x, y) = (score(a), score(b))
            try Expect.that(x < y || (x == y && a.accessOrder <= b.accessOrder), "\(where_): \(a.key) (score \(x)) went before \(b.key) (score \(y))")
        }
        guard let last = victims.last else { return }
        let highest = score(last)
        for entry in kept where !entry.pinned {
            let value = score(entry)
            try Expect.that(value >= highest, "\(where_): \(entry.key) scoring \(value) stayed while one scoring \(highest) went")
            if value == highest { try Expect.that(entry.accessOrder >= last.accessOrder, "\(where_): of two scoring \(highest), the more recently used went") }
        }
        try Expect.that(!within(bytes + last.size, kept.count + 1), "\(where_): evicted one more than needed")
    }
}
