import BuckiaCore
import BuckiaResourceCache
import BuckiaTestSupport
import Foundation
import Testing

/// A cache in a folder of its own, on a clock the test moves.
final class CacheFixture: @unchecked Sendable {
    /// A folder of the test's own; the cache is `cache` inside it, so a path that escapes the
    /// cache lands where the test can see it, never in a shared folder.
    let parent: URL
    let folder: URL
    let clock = Locked(Date(timeIntervalSince1970: 1_800_000_000))
    var cache: ResourceCache

    init(_ configure: (inout ResourceCacheConfiguration) -> Void = { _ in }) throws {
        parent = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-resource-cache-\(UUID().uuidString)")
        folder = parent.appendingPathComponent("cache")
        var configuration = ResourceCacheConfiguration()
        configure(&configuration)
        let clock = clock
        cache = try ResourceCache(folder: folder, configuration: configuration, clock: { clock.withLock { $0 } })
    }

    deinit {
        do {
            try FileManager.default.removeItem(at: parent)
        } catch {
            print("\(parent.path) was left behind: \(error)")
        }
    }

    func advance(_ seconds: TimeInterval) { clock.withLock { $0 += seconds } }

    static func url(_ text: String) throws -> ResourceLocation { .url(try #require(URL(string: text))) }
}

@Suite("Resource identifiers and paths")
struct ResourceIdentityTests {
    @Test("The default identifier is the MD5 of the URL as written, and the default path {md5}_{filename}")
    func defaults() throws {
        let location = try CacheFixture.url("https://example.com/img/a.png")
        #expect(try MD5IdentifierProvider().identifier(for: location) == "a1572cc9d4d132262a6c670dacdc96c8")
        let path = FlatStoragePathProvider().path(for: location, identifier: "a1572cc9d4d132262a6c670dacdc96c8", fileExtension: "", storedAt: Date(), size: 10)
        #expect(path == "a1572cc9d4d132262a6c670dacdc96c8_a.png")
        #expect(try SHA256IdentifierProvider().identifier(for: location).count == 64)
    }

    /// Pairs of URLs, and whether the signed-URL filter makes them one entry.
    static let signedPairs: [(String, String, Bool)] = [
        (
            "https://bucket.s3.amazonaws.com/a.png?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261127T000000Z&X-Amz-Signature=abc&X-Amz-Expires=60",
            "https://bucket.s3.amazonaws.com/a.png?X-Amz-Signature=def&X-Amz-Date=20261128T000000Z&X-Amz-Expires=3600&X-Amz-Algorithm=AWS4-HMAC-SHA256", true
        ),
        ("https://cdn.example/a.png?Expires=1&Signature=x&Key-Pair-Id=k", "https://cdn.example/a.png?Expires=2&Signature=y&Key-Pair-Id=k", true),
        ("https://CDN.example:443/a.png#top", "https://cdn.example/a.png", true),
        ("https://cdn.example/a.png?w=100&h=50", "https://cdn.example/a.png?h=50&w=100", true),
        ("https://cdn.example/a.png?w=100", "https://cdn.example/a.png?w=200", false),
        ("https://cdn.example/a.png", "https://cdn.example/b.png", false),
        ("http://cdn.example/a.png", "https://cdn.example/a.png", false),
    ]

    @Test("Signed URLs whose signature and expiry rotate are one entry; what names another resource is another", arguments: signedPairs.indices)
    func signedURLs(_ index: Int) throws {
        let (a, b, same) = Self.signedPairs[index]
        let provider = NormalizingIdentifierProvider()
        let first = try provider.identifier(for: CacheFixture.url(a))
        let second = try provider.identifier(for: CacheFixture.url(b))
        #expect((first == second) == same, "\(a) and \(b)")
    }

    /// Last components a URL can carry, and what the flat name must be.
    static let hostileFileNames: [(String, String)] = [
        ("https://x.example/a/..%2F..%2Fetc%2Fpasswd", "id_.._.._etc_passwd"),
        ("https://x.example/%2E%2E", "id"),
        ("https://x.example/", "id"),
        ("https://x.example/" + String(repeating: "n", count: 300) + ".png", "id_" + String(repeating: "n", count: 252)),
        ("https://x.example/caf%C3%A9%0A.png", "id_café_.png"),
    ]

    @Test("A hostile or overlong file name becomes one safe component within 255 bytes", arguments: hostileFileNames.indices)
    func hostileNames(_ index: Int) throws {
        let (url, expected) = Self.hostileFileNames[index]
        let path = FlatStoragePathProvider().path(for: try CacheFixture.url(url), identifier: "id", fileExtension: "", storedAt: Date(), size: 10)
        #expect(path == expected)
        #expect(path.utf8.count <= 255 && !path.contains("/"))
    }

    @Test("By size class: a resource stored again at another size moves, and its old file goes")
    func sizePaths() throws {
        let fixture = try CacheFixture { $0.pathProvider = SizeStoragePathProvider(mediumFrom: 100, largeFrom: 1000) }
        let location = try CacheFixture.url("https://x.example/photo.png")
        var files: [String] = []
        for size in [10, 500, 5000, 10] {
            let stored = try fixture.cache.store(Data(repeating: 7, count: size), for: location)
            files.append(String(stored.file.path.dropFirst(fixture.folder.path.count + 1)))
            let classes = try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path).filter { !$0.hasPrefix(".") }
            let held = try classes.flatMap { folder in try FileManager.default.contentsOfDirectory(atPath: fixture.folder.appendingPathComponent(folder).path).map { "\(folder)/\($0)" } }
            #expect(held == [files.last], "after storing \(size) bytes the cache holds \(held)")
        }
        #expect(files.map { $0.split(separator: "/")[0] } == ["small", "medium", "large", "small"])
    }

    @Test("By domain, by date (UTC) and by category, with the transform's extension")
    func hierarchicalPaths() throws {
        let location = try CacheFixture.url("https://Images.Example.com/a/b.jpg")
        let day = Date(timeIntervalSince1970: 1_759_708_800)  // 2025-10-06 00:00 UTC
        #expect(DomainStoragePathProvider().path(for: location, identifier: "abc", fileExtension: "z", storedAt: day, size: 10) == "images.example.com/abc.z")
        #expect(DateStoragePathProvider().path(for: location, identifier: "abc", fileExtension: "", storedAt: day, size: 10) == "2025/10/06/abc")
        let category = CategoryStoragePathProvider { $0.text.contains("/a/") ? "avatars" : "other" }
        #expect(category.path(for: location, identifier: "abc", fileExtension: "", storedAt: day, size: 10) == "avatars/abc")
    }

    struct EscapingPaths: StoragePathProvider {
        let path: String
        func path(for location: ResourceLocation, identifier: String, fileExtension: String, storedAt: Date, size: Int64) -> String { path }
    }

    @Test("A path provider's path that could leave the folder is refused and nothing is written", arguments: ["../outside", "/tmp/x", "a//b", "a/./b", ".buckia-index.sqlite", ""])
    func escapingPaths(_ path: String) throws {
        let fixture = try CacheFixture { $0.pathProvider = EscapingPaths(path: path) }
        let error = #expect(throws: BuckiaError.self) { try fixture.cache.store(Data("x".utf8), for: try CacheFixture.url("https://x.example/a")) }
        #expect(error?.code == .invalidPath)
        #expect(try fixture.cache.statistics().entries == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.parent.path) == ["cache"], "something was written beside the cache")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path).allSatisfy { $0.hasPrefix(".buckia") })
    }
}

@Suite("Resource cache: stores, tiers, damage")
struct ResourceCacheStoreTests {
    static let transforms: [any ResourceTransform] = [IdentityTransform(), ZlibTransform(), AdaptiveTransform(threshold: 1000)]

    @Test("Stored bytes come back from memory, then from disk once memory lets them go, through every transform", arguments: 0..<3)
    func roundTrip(_ index: Int) throws {
        let transform = Self.transforms[index]
        let fixture = try CacheFixture {
            $0.transform = transform
            $0.memoryBytes = 10_000
        }
        let a = try CacheFixture.url("https://x.example/a.json")
        let b = try CacheFixture.url("https://x.example/b.json")
        let data = Data(String(repeating: "compressible ", count: 500).utf8)
        try fixture.cache.store(data, for: a, response: CachedResponse(etag: "\"1\""))
        let first = try #require(try fixture.cache.lookup(a))
        #expect(first.data == data && first.tier == .memory && first.response.etag == "\"1\"")
        try fixture.cache.store(Data(repeating: 7, count: 9_000), for: b)  // pushes a out of memory
        let second = try #require(try fixture.cache.lookup(a))
        #expect(second.data == data && second.tier == .disk)
        let stored = try Data(contentsOf: second.file)
        #expect((stored == data) == (transform.name == "identity"), "\(transform.name) stored \(stored.count) bytes")
    }

    @Test("A file missing, truncated, altered or undecodable is a miss that drops its entry, never wrong bytes", arguments: ["missing", "truncated", "altered", "garbage"])
    func damage(_ kind: String) throws {
        let fixture = try CacheFixture {
            $0.memoryBytes = 0
            $0.transform = kind == "garbage" ? ZlibTransform() : IdentityTransform()
        }
        let location = try CacheFixture.url("https://x.example/a.bin")
        let stored = try fixture.cache.store(Data(repeating: 1, count: 4096), for: location)
        switch kind {
        case "missing": try FileManager.default.removeItem(at: stored.file)
        case "truncated": try Data(repeating: 1, count: 100).write(to: stored.file)
        case "altered": try Data(repeating: 2, count: 4096).write(to: stored.file)
        default: break
        }
        if kind == "garbage" {
            // Bytes that match the recorded hash but do not decode: the index itself altered.
            let other = try CacheFixture { $0.memoryBytes = 0 }
            let raw = try other.cache.store(Data("not zlib".utf8), for: location)
            try FileManager.default.removeItem(at: stored.file)
            try FileManager.default.copyItem(at: raw.file, to: stored.file)
            #expect(try fixture.cache.lookup(location) == nil)
            return
        }
        #expect(try fixture.cache.lookup(location) == nil)
        #expect(try fixture.cache.statistics().entries == 0)
        #expect(!FileManager.default.fileExists(atPath: stored.file.path))
    }

    @Test("A resource larger than the whole cache is refused, and the cache keeps what it had")
    func tooLarge() throws {
        let fixture = try CacheFixture { $0.maxBytes = 1000 }
        let small = try CacheFixture.url("https://x.example/small")
        try fixture.cache.store(Data(repeating: 1, count: 500), for: small)
        let error = #expect(throws: BuckiaError.self) { try fixture.cache.store(Data(repeating: 2, count: 1001), for: try CacheFixture.url("https://x.example/big")) }
        #expect(error?.code == .invalidConfiguration)
        #expect(try fixture.cache.lookup(small)?.data.count == 500)
        #expect(try fixture.cache.statistics().entries == 1)
    }

    struct Upper: ResourceProcessor {
        let id: String
        func shouldProcess(_ location: ResourceLocation) -> Bool { !location.text.hasSuffix(".raw") }
        func process(_ data: Data, for location: ResourceLocation) throws -> Data { Data(String(decoding: data, as: UTF8.self).uppercased().utf8) + Data(id.utf8) }
    }

    @Test("The processor's identity is in the key: one URL processed two ways is two entries, and a location it skips is stored as it came")
    func processorIdentity() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-resource-cache-\(UUID().uuidString)")
        defer {
            do { try FileManager.default.removeItem(at: folder) } catch { Issue.record("\(folder.path) left behind: \(error)") }
        }
        func cache(_ id: String) throws -> ResourceCache {
            var configuration = ResourceCacheConfiguration()
            configuration.processor = Upper(id: id)
            return try ResourceCache(folder: folder, configuration: configuration)
        }
        let location = try CacheFixture.url("https://x.example/a.txt")
        try cache("v1").store(Data("abc".utf8), for: location)
        try cache("v2").store(Data("abc".utf8), for: location)
        #expect(try cache("v1").lookup(location)?.data == Data("ABCv1".utf8))
        #expect(try cache("v2").lookup(location)?.data == Data("ABCv2".utf8))
        #expect(try cache("v1").statistics().entries == 2)
        #expect(try cache("v1").key(for: location) != cache("v2").key(for: location))
        let raw = try CacheFixture.url("https://x.example/a.raw")
        try cache("v1").store(Data("abc".utf8), for: raw)
        #expect(try cache("v1").lookup(raw)?.data == Data("abc".utf8))
    }

    @Test("A full cache trims a tenth below its limit, not to it, and keeps a resource nearly as large as the cache alone")
    func trimsBelowTheLimit() throws {
        let fixture = try CacheFixture {
            $0.maxBytes = 1000
            $0.memoryBytes = 0
        }
        for n in 0..<11 { try fixture.cache.store(Data(repeating: 1, count: 100), for: try CacheFixture.url("https://x.example/\(n)")) }
        var statistics = try fixture.cache.statistics()
        #expect(statistics.entries == 9 && statistics.bytes == 900, "\(statistics)")
        #expect(try fixture.cache.lookup(try CacheFixture.url("https://x.example/10")) != nil)
        let large = try CacheFixture.url("https://x.example/large")
        try fixture.cache.store(Data(repeating: 2, count: 950), for: large)
        statistics = try fixture.cache.statistics()
        #expect(statistics.entries == 1 && statistics.bytes == 950, "\(statistics)")
        #expect(try fixture.cache.lookup(large)?.data.count == 950)
    }

    @Test("The totals a store checks follow every row: a replaced entry's new size counts")
    func totalsFollowTheRows() throws {
        let fixture = try CacheFixture { $0.maxBytes = 1000 }
        let (a, b) = (try CacheFixture.url("https://x.example/a"), try CacheFixture.url("https://x.example/b"))
        try fixture.cache.store(Data(repeating: 1, count: 100), for: a)
        try fixture.cache.store(Data(repeating: 1, count: 950), for: a)
        try fixture.cache.store(Data(repeating: 1, count: 100), for: b)
        let statistics = try fixture.cache.statistics()
        #expect(statistics.bytes <= 1000, "over the limit: \(statistics)")
    }

    @Test("An entry another opener replaced is read from its new file, never from the bytes this one kept in memory")
    func memoryTierFollowsTheIndex() throws {
        let fixture = try CacheFixture()
        let location = try CacheFixture.url("https://x.example/a")
        try fixture.cache.store(Data("version one".utf8), for: location)
        #expect(try fixture.cache.lookup(location)?.tier == .memory)
        // Another process (here another opener of the folder) stores a new version.
        let other = try ResourceCache(folder: fixture.folder, configuration: fixture.cache.configuration)
        try other.store(Data("version two".utf8), for: location)
        let read = try #require(try fixture.cache.lookup(location))
        #expect(read.data == Data("version two".utf8) && read.tier == .disk)
        #expect(try fixture.cache.lookup(location)?.tier == .memory)
    }

    @Test("Entries survive reopening the folder; clear removes every file but the cache's own")
    func persistenceAndClear() throws {
        let fixture = try CacheFixture()
        let location = try CacheFixture.url("https://x.example/a")
        let stored = try fixture.cache.store(Data("kept".utf8), for: location, response: CachedResponse(lastModified: "Wed, 21 Oct 2015 07:28:00 GMT"))
        let reopened = try ResourceCache(folder: fixture.folder)
        let found = try #require(try reopened.lookup(location))
        #expect(found.data == Data("kept".utf8) && found.tier == .disk && found.response.lastModified == "Wed, 21 Oct 2015 07:28:00 GMT")
        try reopened.clear()
        #expect(!FileManager.default.fileExists(atPath: stored.file.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path).allSatisfy { $0.hasPrefix(".buckia") })
    }

    @Test("Metadata is saved and read back by each provider, and goes with its entry", arguments: ["json", "sqlite", "xattr"])
    func metadata(_ kind: String) throws {
        let side = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-metadata-\(UUID().uuidString).sqlite")
        defer { for suffix in ["", "-wal", "-shm"] { _ = unlink(side.path + suffix) } }
        let provider: any ResourceMetadataProvider =
            switch kind {
            case "json": JSONSidecarMetadataProvider()
            case "sqlite": try SQLiteMetadataProvider(path: side.path)
            default: ExtendedAttributeMetadataProvider()
            }
        let fixture = try CacheFixture { $0.metadataProvider = provider }
        let location = try CacheFixture.url("https://x.example/a")
        let tags = ["source": "feed", "tag": "ünïcode"]
        do {
            try fixture.cache.store(Data("x".utf8), for: location, metadata: tags)
        } catch let error as BuckiaError where kind == "xattr" && error.code == .unsupported {
            // This file system keeps no user attributes: the error says so and names the others.
            #expect(error.message.contains("JSON sidecar"))
            return
        }
        #expect(try fixture.cache.metadata(for: location) == tags)
        try fixture.cache.remove(location)
        #expect(try fixture.cache.metadata(for: location) == nil)
        if kind == "json" {
            #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path).allSatisfy { $0.hasPrefix(".buckia") })
        }
    }

    @Test("Sixteen openers of one new cache folder at the same moment all succeed, 20 times over")
    func concurrentCreation() throws {
        let base = try CacheFixture()
        let parent = base.parent
        let failures = simultaneously(threads: 16, rounds: 20) { round in
            _ = try ResourceCache(folder: parent.appendingPathComponent("round-\(round)"))
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
    }
}
