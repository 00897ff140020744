import BuckiaConformance
import BuckiaCore
import BuckiaMemory
import BuckiaResourceCache
import Foundation

/// The resource-cache scenarios: see ``ResourceCacheConformance``. Each runs a cache with the
/// configuration under test; none swaps out the plugin it checks.
enum ResourceCacheScenarios {
    static var all: [ResourceCacheScenario] { entries + identities + plugins + eviction }

    static func url(_ text: String) throws -> ResourceLocation {
        guard let url = URL(string: text) else { throw ConformanceFailure("The scenario's location \(text) is not a URL.") }
        return .url(url)
    }

    /// Resources that differ in one way each (path, host, scheme, port, case, a kept query
    /// parameter, a remote's name or path, the end of a long name, a Unicode spelling): no two
    /// may share an entry or a file.
    static func distinctLocations() throws -> [ResourceLocation] {
        let long = String(repeating: "n", count: 300)
        var texts = (0..<40).map { "https://cdn.example/images/\($0).png" }
        texts += [
            "https://a.example/x.png", "https://b.example/x.png", "http://a.example/x.png", "https://a.example:8443/x.png", "https://a.example/X.png",
            "https://a.example/1/x.png", "https://a.example/2/x.png", "https://a.example/x.png?w=100", "https://a.example/x.png?w=200",
            "https://a.example/x.png?w=100&h=5", "https://a.example/\(long)1.png", "https://a.example/\(long)2.png", "https://a.example/caf%C3%A9.png",
            "https://a.example/cafe%CC%81.png", "https://a.example/x.png.json", "https://a.example/x", "https://a.example/x/",
        ]
        let remotes: [ResourceLocation] = [
            .remote(name: "photos", path: "x.png"), .remote(name: "videos", path: "x.png"), .remote(name: "photos", path: "a/x.png"),
            .remote(name: "photos", path: "a/x.png.z"),
        ]
        return try texts.map(url) + remotes
    }

    /// Locations built to break paths: traversal encoded in the name, Buckia's own file names,
    /// 300-byte names, control characters, a remote path that climbs.
    static func hostileLocations() throws -> [ResourceLocation] {
        let texts = [
            "https://x.example/a/..%2F..%2Fetc%2Fpasswd", "https://x.example/%2E%2E", "https://x.example/", "https://x.example/\(String(repeating: "n", count: 300)).png",
            "https://x.example/caf%C3%A9%0A.png", "https://x.example/.buckia-index.sqlite", "https://x.example/a%00b", "https://x.example/\(String(repeating: "%2F", count: 60))",
            "https://x.example/%E2%80%AE.png", "https://.buckia-tmp/x.png",
        ]
        let remotes: [ResourceLocation] = [
            .remote(name: "..", path: "../../etc/passwd"), .remote(name: "r", path: "a/../../b"), .remote(name: "r/..", path: "/"), .remote(name: ".buckia-locks", path: "x"),
        ]
        return try texts.map(url) + remotes
    }

    /// Sizes that cross the interesting lines: empty, a byte, a page, the transforms' and the
    /// size layout's thresholds.
    static let sizes = [0, 1, 4_096, 100 << 10, (1 << 20) + 7]

    /// Bytes for the `index`th resource: half of them compressible text, half noise.
    static func bytes(_ count: Int, _ index: Int) -> Data {
        index % 2 == 0 ? Data((0..<count).map { UInt8(ascii: "a") + UInt8(truncatingIfNeeded: ($0 / 64 + index) % 26) }) : ChunkStoreScenarios.noise(count, seed: UInt64(index) + 1)
    }

    static func store(_ cache: ResourceCache, _ data: Data, _ location: ResourceLocation, metadata: [String: String]? = nil) throws -> CachedResource {
        do {
            return try cache.store(data, for: location, metadata: metadata)
        } catch {
            throw ConformanceFailure("Storing \(data.count) bytes for \(location) failed: \(error)")
        }
    }

    // MARK: Entries

    static let entries: [ResourceCacheScenario] = [
        ResourceCacheScenario(
            "cache: round trip", contract: "Bytes stored are read back whole (processed when a processor takes them), from memory, then from disk after reopening."
        ) { context in
            let cache = try context.open()
            var stored: [(ResourceLocation, Data)] = []
            for (index, size) in sizes.enumerated() {
                for location in [try url("https://cdn.example/r/\(index).png"), ResourceLocation.remote(name: "media", path: "r/\(index).json")] {
                    let data = bytes(size, index)
                    let resource = try store(cache, data, location)
                    try Expect.sameBytes(resource.data, try context.expected(data, for: location), "what storing \(location) returned")
                    stored.append((location, data))
                }
            }
            for (location, data) in stored {
                let found = try cache.lookup(location)
                try Expect.sameBytes(found?.data ?? Data("a miss".utf8), try context.expected(data, for: location), "\(location) read back")
            }
            try cache.close()
            let again = try context.open { $0.memoryBytes = 0 }
            for (location, data) in stored {
                let found = try again.lookup(location)
                try Expect.equal(found?.tier, .disk, "the tier of \(location) after reopening without a memory tier")
                try Expect.sameBytes(found?.data ?? Data("a miss".utf8), try context.expected(data, for: location), "\(location) after reopening")
            }
        },
        ResourceCacheScenario(
            "cache: the index agrees with the files", contract: "Every entry's file is inside the cache folder and the statistics count exactly the files' bytes."
        ) { context in
            let cache = try context.open { ($0.maxBytes, $0.maxCount) = (nil, nil) }
            var files: Set<String> = []
            var bytesOnDisk: Int64 = 0
            for index in 0..<30 {
                let resource = try store(cache, bytes(index * 997, index), try url("https://cdn.example/agree/\(index).bin"))
                let path = resource.file.standardizedFileURL.path
                try Expect.that(path.hasPrefix(context.folder.standardizedFileURL.path + "/"), "\(path) is not inside the cache folder")
                files.insert(path)
            }
            for path in files {
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                bytesOnDisk += (attributes[.size] as? NSNumber)?.int64Value ?? -1
            }
            let statistics = try cache.statistics()
            try Expect.equal(statistics.entries, 30, "entries")
            try Expect.equal(files.count, 30, "distinct files")
            try Expect.equal(statistics.bytes, bytesOnDisk, "bytes counted against the files' sizes")
        },
        ResourceCacheScenario(
            "cache: a damaged file is a miss", contract: "A file altered, truncated, removed or replaced by a link is a miss (never other bytes), and storing again heals it."
        ) { context in
            let location = try url("https://cdn.example/damaged.png")
            let data = bytes(50_000, 1)
            let damages: [(String, @Sendable (URL) throws -> Void)] = [
                ("one byte changed", { file in
                    var stored = try Data(contentsOf: file)
                    stored[stored.count / 2] ^= 0xFF
                    try stored.write(to: file)
                }),
                ("truncated", { file in try Data(contentsOf: file).prefix(100).write(to: file) }),
                ("removed", { file in try FileManager.default.removeItem(at: file) }),
                ("a link to another file", { file in
                    try FileManager.default.removeItem(at: file)
                    try FileManager.default.createSymbolicLink(at: file, withDestinationURL: context.outside.appendingPathComponent("sentinel"))
                }),
            ]
            for (what, damage) in damages {
                let resource = try store(try context.open(), data, location)
                try damage(resource.file)
                let reader = try context.open { $0.memoryBytes = 0 }
                let found = try reader.lookup(location)
                try Expect.that(found == nil, "a file \(what) was served (\(found?.data.count ?? 0) bytes)")
                try Expect.that(try reader.lookup(location) == nil, "after a file \(what), a second read was not a miss")
            }
            _ = try store(try context.open(), data, location)
            try Expect.sameBytes(try context.open { $0.memoryBytes = 0 }.lookup(location)?.data ?? Data(), try context.expected(data, for: location), "the entry stored again")
        },
        ResourceCacheScenario(
            "cache: remove and clear leave nothing behind", contract: "Removing an entry removes its file and metadata; clearing leaves no file but Buckia's own."
        ) { context in
            let cache = try context.open()
            var files: [ResourceLocation: URL] = [:]
            for index in 0..<10 {
                let location = try url("https://cdn.example/gone/\(index).png")
                files[location] = try store(cache, bytes(2_000 + index, index), location, metadata: ["n": "\(index)"]).file
            }
            let first = try url("https://cdn.example/gone/0.png")
            try Expect.that(try cache.remove(first), "removing an entry said there was none")
            try Expect.that(try cache.lookup(first) == nil, "a removed entry was read")
            try Expect.that(try cache.metadata(for: first) == nil, "a removed entry's metadata was read")
            try Expect.that(!FileManager.default.fileExists(atPath: files[first]?.path ?? ""), "a removed entry's file stayed")
            try Expect.that(try !cache.remove(first), "removing it again said there was one")
            try Expect.equal(try cache.statistics().entries, 9, "entries after one removal")
            try cache.clear()
            try Expect.equal(try cache.statistics().entries, 0, "entries after clearing")
            try Expect.equal(try context.files().sorted(), [], "files left after clearing")
        },
        ResourceCacheScenario(
            "cache: an entry larger than the limit is refused", contract: "A resource larger than the byte limit as stored is refused and the cache is as it was."
        ) { context in
            let cache = try context.open { ($0.maxBytes, $0.maxCount) = (16_384, nil) }
            for index in 0..<5 { _ = try store(cache, bytes(300, index), try url("https://cdn.example/small/\(index).png")) }
            let before = (try cache.statistics(), try context.files())
            let big = try url("https://cdn.example/big.bin")
            try await Expect.error(.invalidConfiguration, "storing 200 KiB of noise under a 16 KiB limit") { try cache.store(ChunkStoreScenarios.noise(200_000, seed: 9), for: big) }
            try Expect.that(try cache.lookup(big) == nil, "the refused entry was read")
            try Expect.equal(try cache.statistics().entries, before.0.entries, "entries")
            try Expect.equal(try context.files(), before.1, "the files")
            for index in 0..<5 { try Expect.that(try cache.lookup(try url("https://cdn.example/small/\(index).png")) != nil, "small \(index) went") }
        },
    ]

    // MARK: Identities

    static let identities: [ResourceCacheScenario] = [
        ResourceCacheScenario(
            "identifiers: stable plain names", contract: "A location's identifier is a plain name of 1 to 128 bytes, the same every time and in every opener."
        ) { context in
            let provider = context.configuration.identifierProvider
            let other = try context.open()
            let cache = try context.open()
            for location in try distinctLocations() + hostileLocations() {
                let identifier: String
                do {
                    identifier = try provider.identifier(for: location)
                } catch {
                    throw ConformanceFailure("The identifier of \(location) failed: \(error)")
                }
                try Expect.that(
                    !identifier.isEmpty && identifier.utf8.count <= 128 && !identifier.contains("/") && !identifier.utf8.contains(0) && identifier != "." && identifier != "..",
                    "the identifier \(identifier.debugDescription) of \(location) is not a plain name of 1 to 128 bytes")
                try Expect.equal(try provider.identifier(for: location), identifier, "the identifier of \(location) asked again")
                try Expect.equal(try other.key(for: location), try cache.key(for: location), "the key of \(location) in two openers")
            }
        },
        ResourceCacheScenario(
            "identifiers: distinct resources are distinct entries", contract: "Resources differing in any part that names them are separate entries in separate files."
        ) { context in
            let cache = try context.open { ($0.maxBytes, $0.maxCount) = (nil, nil) }
            let locations = try distinctLocations()
            var files: [String: ResourceLocation] = [:]
            for (index, location) in locations.enumerated() {
                let file = try store(cache, bytes(100 + index, index), location).file.path
                if let earlier = files[file] { throw ConformanceFailure("\(earlier) and \(location) were stored in one file, \(file)") }
                files[file] = location
            }
            let reader = try context.open { ($0.maxBytes, $0.maxCount, $0.memoryBytes) = (nil, nil, 0) }
            for (index, location) in locations.enumerated() {
                try Expect.sameBytes(reader.lookup(location)?.data ?? Data("a miss".utf8), try context.expected(bytes(100 + index, index), for: location), "\(location)")
            }
            try Expect.equal(try reader.statistics().entries, locations.count, "entries")
        },
        ResourceCacheScenario(
            "identifiers: hostile locations stay inside the folder",
            contract: "A location made to escape (traversal, reserved names, 300-byte names, control characters) is stored inside the folder or refused by a BuckiaError."
        ) { context in
            let cache = try context.open()
            let folder = context.folder.standardizedFileURL.path + "/"
            var stored = 0
            for (index, location) in try hostileLocations().enumerated() {
                let data = bytes(64, index)
                let resource: CachedResource
                do {
                    resource = try cache.store(data, for: location)
                } catch is BuckiaError {
                    try Expect.that(try cache.lookup(location) == nil, "\(location) was refused, then read")
                    continue
                }
                stored += 1
                try Expect.that(resource.file.standardizedFileURL.path.hasPrefix(folder), "\(location) was stored at \(resource.file.path)")
                try Expect.that(!resource.file.lastPathComponent.hasPrefix(".buckia"), "\(location) was stored under a name Buckia reserves: \(resource.file.path)")
                try Expect.sameBytes(try cache.lookup(location)?.data ?? Data("a miss".utf8), try context.expected(data, for: location), "\(location)")
            }
            try Expect.that(stored > 0, "every hostile location was refused; ordinary ones among them (`https://x.example/`) should be stored")
            // Buckia's own files still work after all that.
            let check = try url("https://cdn.example/after-hostile.png")
            _ = try store(cache, Data("after".utf8), check)
            try Expect.that(try context.open().lookup(check) != nil, "the cache no longer works after the hostile locations")
        },
        ResourceCacheScenario(
            "identifiers: rotating signatures are one entry", contract: "Signed URLs that differ only in rotating signature parameters are one entry; other parameters still count.",
            requires: [.stableSignedURLs]
        ) { context in
            let cache = try context.open()
            let pairs = [
                (
                    "https://bucket.s3.amazonaws.com/a.png?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261127T000000Z&X-Amz-Signature=abc&X-Amz-Expires=60",
                    "https://bucket.s3.amazonaws.com/a.png?X-Amz-Signature=def&X-Amz-Date=20261128T000000Z&X-Amz-Expires=3600&X-Amz-Algorithm=AWS4-HMAC-SHA256"
                ),
                ("https://cdn.example/b.png?Expires=1&Signature=x&Key-Pair-Id=k", "https://cdn.example/b.png?Expires=2&Signature=y&Key-Pair-Id=k"),
            ]
            for (index, (first, second)) in pairs.enumerated() {
                _ = try store(cache, bytes(500, index), try url(first))
                try Expect.sameBytes(try cache.lookup(try url(second))?.data ?? Data("a miss".utf8), try context.expected(bytes(500, index), for: try url(first)), "\(second) after storing \(first)")
            }
            _ = try store(cache, Data("w100".utf8), try url("https://cdn.example/c.png?w=100&Signature=1"))
            try Expect.that(try cache.lookup(try url("https://cdn.example/c.png?w=200&Signature=1")) == nil, "?w=200 was served the entry of ?w=100")
        },
    ]
}
