import Buckia
import BuckiaChunkEngine
import BuckiaChunks
import BuckiaCore
import BuckiaDiskEngine
import Foundation
import Testing

@Suite("Chunk engine")
struct ChunkEngineTests {
    static let key = String(repeating: "5a", count: 32)

    @Test("bad configurations are refused, naming the option, never the key", arguments: [
        ("unknown option", ["layout": "git"], [String: String]()),
        ("unknown organization", ["organization": "spiral"], [:]),
        ("bad average size", ["average-chunk-size": "big"], [:]),
        ("average size out of bounds", ["average-chunk-size": "100"], [:]),
        ("unknown compression", ["compression": "lz4"], [:]),
        ("key variable not set", ["encryption-key-env": "MISSING"], [:]),
        ("key too short", ["encryption-key-env": "KEY"], ["KEY": "abcdef"]),
        ("verify not a boolean", ["verify": "maybe"], [:]),
    ])
    func refusesBadConfiguration(_ what: String, _ options: [String: String], _ environment: [String: String]) async throws {
        let scratch = try Scratch()
        do {
            _ = try await ChunkStorageEngine(configuration: EngineConfiguration(type: .chunk, directory: scratch.url.path, options: options), environment: environment)
            Issue.record("\(what): opened")
        } catch let error as BuckiaError {
            #expect(error.code == .invalidConfiguration, "\(what): \(error)")
            #expect(!error.description.contains("abcdef"), "\(what): the message repeats the key")
        }
    }

    @Test("a directory is required")
    func needsDirectory() async {
        await #expect(throws: BuckiaError.self) { try await ChunkStorageEngine(configuration: EngineConfiguration(type: .chunk)) }
    }

    @Test("values opened with the wrong key fail with unauthorized; with the right one they read back")
    func wrongKey() async throws {
        let scratch = try Scratch()
        let options = ["encryption-key-env": "KEY", "compression": "zlib"]
        let configuration = EngineConfiguration(type: .chunk, directory: scratch.url.path, options: options)
        let engine = try await ChunkStorageEngine(configuration: configuration, environment: ["KEY": Self.key])
        let value = Data(String(repeating: "secret ", count: 5000).utf8)
        try await engine.write(value, key: CacheKey(verbatim: "v"))
        // Another key is refused when the engine opens, before any value is read or written…
        do {
            _ = try await ChunkStorageEngine(configuration: configuration, environment: ["KEY": String(repeating: "a5", count: 32)])
            Issue.record("opened with the wrong key")
        } catch let error as BuckiaError {
            #expect(error.code == .unauthorized)
        }
        // …and so are other transforms: chunks written one way would be reused by the other.
        for options in [["compression": "zlib"], ["encryption-key-env": "KEY"], [:]] {
            await #expect(throws: BuckiaError.self, "opened with \(options)") {
                try await ChunkStorageEngine(configuration: EngineConfiguration(type: .chunk, directory: scratch.url.path, options: options), environment: ["KEY": Self.key])
            }
        }
        // Past that check (settings written by hand), each chunk still refuses the wrong key.
        let intruder = try ChunkStorageEngine(directory: scratch.url, decorate: {
            try CompressedRetrieval(wrapped: EncryptedRetrieval(wrapped: $0, key: [UInt8](repeating: 0xA5, count: 32)))
        })
        do {
            _ = try await intruder.read(key: CacheKey(verbatim: "v"))
            Issue.record("read with the wrong key")
        } catch let error as BuckiaError {
            #expect(error.code == .unauthorized)
        }
        let reopened = try await ChunkStorageEngine(configuration: configuration, environment: ["KEY": Self.key])
        #expect(try await reopened.read(key: CacheKey(verbatim: "v")) == value)
        // Nothing on disk holds the plaintext.
        let stored = try FileManager.default.subpathsOfDirectory(atPath: scratch.url.path + "/chunks")
            .compactMap { try? Data(contentsOf: scratch.url.appendingPathComponent("chunks/" + $0)) }
        #expect(!stored.isEmpty && stored.allSatisfy { $0.range(of: Data("secret".utf8)) == nil })
    }

    @Test("values sharing content share chunks; garbage collection removes only unreferenced ones")
    func sharingAndGarbage() async throws {
        let scratch = try Scratch()
        let engine = try ChunkStorageEngine(directory: scratch.url, chunker: try FastCDC(averageSize: 1024), durability: .none)
        let common = noise(30_000, seed: 5)
        try await engine.write(common + noise(3000, seed: 6), key: CacheKey(verbatim: "a"))
        try await engine.write(common + noise(3000, seed: 7), key: CacheKey(verbatim: "b"))
        let a = try #require(try await engine.manifest(for: CacheKey(verbatim: "a")))
        let b = try #require(try await engine.manifest(for: CacheKey(verbatim: "b")))
        let shared = a.uniqueChunks.intersection(b.uniqueChunks)
        #expect(shared.count >= 15, "values with 30 kB in common share \(shared.count) chunks")
        try await engine.remove(key: CacheKey(verbatim: "a"))
        let removed = try await engine.collectGarbage()
        #expect(removed == a.uniqueChunks.subtracting(b.uniqueChunks).count)
        #expect(try await engine.read(key: CacheKey(verbatim: "b")) == common + noise(3000, seed: 7))
        #expect(try await engine.collectGarbage() == 0)
        try await engine.removeAllData()
        #expect(try await engine.collectGarbage() == b.uniqueChunks.count)
        #expect(try await engine.chunks.enumeration?.allChunks().isEmpty == true)
    }
}

@Suite("Chunk engine documentation")
struct ChunkEngineDocumentationTests {
    @Test("Docs/Configuration.md lists exactly the options the chunk engine reads")
    func optionsAreDocumented() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Docs/Configuration.md")
        let rows = try String(contentsOf: page, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("| `chunk` | `") }
        let documented = Set(rows.compactMap { $0.split(separator: "`").dropFirst(3).first.map(String.init) })
        #expect(documented == ChunkStorageEngine.knownOptions)
    }
}

/// Lists a store's chunks once released: lets a test hold garbage collection mid-way.
final class HeldEnumeration: ChunkStorageEnumeration, Sendable {
    let inner: any ChunkStorageEnumeration
    let entered: AsyncStream<Void>
    private let enteredContinuation: AsyncStream<Void>.Continuation
    private let release = Locked<(released: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    init(_ inner: any ChunkStorageEnumeration) {
        self.inner = inner
        (entered, enteredContinuation) = AsyncStream.makeStream()
    }

    func open() {
        let waiter = release.withLock { state -> CheckedContinuation<Void, Never>? in
            state.released = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func allChunks() async throws -> [ChunkIdentifier] {
        enteredContinuation.yield()
        await withCheckedContinuation { continuation in
            let resumeNow = release.withLock { state -> Bool in
                if state.released { return true }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        return try await inner.allChunks()
    }
}

@Suite("Chunk engine garbage collection")
struct ChunkEngineGarbageTests {
    @Test("a write that arrives while garbage is collected waits for it, and its chunks survive")
    func writesWaitForCollection() async throws {
        let scratch = try Scratch()
        let base = ComposableFileSystemChunkStorage(baseURL: scratch.path("chunks"), durability: .none)
        let held = HeldEnumeration(try #require(base.enumeration))
        let store = ComposedChunkStorage(organization: base.organization, retrieval: base.retrieval, existence: base.existence, enumeration: held)
        let engine = ChunkStorageEngine(chunks: store, index: try DiskStorageEngine(directory: scratch.path("index")), chunker: try FastCDC(averageSize: 1024))
        let value = noise(20_000, seed: 12)
        // An unreferenced copy of the value's chunks: the collection will find them unreferenced.
        try await engine.write(value, key: CacheKey(verbatim: "old"))
        try await engine.remove(key: CacheKey(verbatim: "old"))
        let collection = Task { try await engine.collectGarbage() }
        var entered = held.entered.makeAsyncIterator()
        _ = await entered.next()
        let write = Task { try await engine.write(value, key: CacheKey(verbatim: "new")) }
        var spins = 0
        while await engine.waitingWriterCount == 0 && spins < 100_000 {
            await Task.yield()
            spins += 1
        }
        #expect(await engine.waitingWriterCount == 1, "the write did not wait for the collection")
        held.open()
        let removed = try await collection.value
        try await write.value
        #expect(removed > 0)
        #expect(try await engine.read(key: CacheKey(verbatim: "new")) == value)
    }
}
