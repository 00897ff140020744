import BuckiaChunkEngine
import BuckiaChunks
import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// A folder of the test's own, removed at the end.
final class Scratch: Sendable {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-chunks-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> URL { url.appendingPathComponent(name) }
}

/// Records the metadata each write carries, over a file-system retrieval.
final class MetadataRecorder: ChunkStorageRetrieval, Sendable {
    let wrapped: FileSystemRetrieval
    let recorded = Locked<[String: ChunkMetadata]>([:])
    init(_ wrapped: FileSystemRetrieval) { self.wrapped = wrapped }
    func readChunk(at path: String) async throws -> Data? { try await wrapped.readChunk(at: path) }
    func writeChunk(_ data: Data, at path: String, metadata: ChunkMetadata?) async throws {
        if let metadata { recorded.withLock { $0[path] = metadata } }
        try await wrapped.writeChunk(data, at: path, metadata: metadata)
    }
    func chunkExists(at path: String) async throws -> Bool { try await wrapped.chunkExists(at: path) }
    func deleteChunk(at path: String) async throws { try await wrapped.deleteChunk(at: path) }
}

func noise(_ count: Int, seed: UInt64) -> Data {
    var generator = SplitMix64(seed: seed)
    return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
}

@Suite("Chunk identifiers and organizations")
struct ChunkIdentifierTests {
    @Test("refuses what is not a digest", arguments: [
        "", "../../etc/passwd", "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789",
        "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde/",
        "0123456789abcdef0123456789abcdef01234567/9",
    ])
    func refusesMalformed(_ text: String) {
        #expect(throws: BuckiaError.self) { try ChunkIdentifier(id: text) }
    }

    @Test("MD5 and CRC-32C cannot address chunks")
    func refusesWeakAlgorithms() {
        #expect(throws: BuckiaError.self) { try ChunkIdentifier.of(Data("x".utf8), algorithm: .md5) }
        #expect(throws: BuckiaError.self) { try ChunkIdentifier(id: String(repeating: "a", count: 32), algorithm: .md5) }
    }

    @Test("Git-style paths fan out by the leading digits; depth is clamped to 1...4")
    func gitStylePaths() throws {
        let identifier = try ChunkIdentifier(id: String(repeating: "0123456789abcdef", count: 4))
        #expect(GitStyleOrganization().storagePath(for: identifier) == "01/" + identifier.id)
        #expect(GitStyleOrganization(directoryDepth: 2).storagePath(for: identifier) == "01/23/" + identifier.id)
        #expect(GitStyleOrganization(directoryDepth: 9).directoryDepth == 4)
        #expect(GitStyleOrganization(directoryDepth: -1).directoryDepth == 1)
        #expect(FlatOrganization().storagePath(for: identifier) == identifier.id)
        #expect(try ChunkOrganizations.parse("git:3") is GitStyleOrganization)
        #expect(throws: BuckiaError.self) { try ChunkOrganizations.parse("git:5") }
    }
}

@Suite("Chunk decorators")
struct ChunkDecoratorTests {
    @Test("compression records whether it helped, in the metadata and the stored header")
    func compressionRecordsWhich() async throws {
        let scratch = try Scratch()
        let recorder = MetadataRecorder(FileSystemRetrieval(baseURL: scratch.url))
        let store = ComposedChunkStorage(organization: FlatOrganization(), retrieval: try CompressedRetrieval(wrapped: recorder))
        let text = try await store.storeChunk(Data(String(repeating: "abc", count: 1000).utf8))
        let random = try await store.storeChunk(noise(3000, seed: 1))
        #expect(recorder.recorded.withLock { $0[text.id]?.transforms } == ["zlib"])
        #expect(recorder.recorded.withLock { $0[random.id]?.transforms } == ["stored"])
        let stored = try Data(contentsOf: scratch.path(random.id))
        #expect(stored.count == 3000 + 12, "incompressible bytes are kept with a 12-byte header, not grown by deflate")
    }

    @Test("a chunk moved to another address does not decrypt")
    func encryptionBindsThePath() async throws {
        let scratch = try Scratch()
        let store = try ComposableFileSystemChunkStorage(baseURL: scratch.url, organization: FlatOrganization(), durability: .none)
            .decorated { try EncryptedRetrieval(wrapped: $0, key: [UInt8](repeating: 1, count: 32)) }
        let first = try await store.storeChunk(Data("first".utf8))
        let second = try await store.storeChunk(Data("second".utf8))
        try FileManager.default.removeItem(at: scratch.path(second.id))
        try FileManager.default.copyItem(at: scratch.path(first.id), to: scratch.path(second.id))
        await #expect(throws: BuckiaError.self) { try await store.readChunk(second) }
        do {
            _ = try await store.readChunk(second)
        } catch let error as BuckiaError {
            #expect(error.code == .corrupt)
        }
    }

    @Test("a key that is not 64 hex digits is refused without echoing it", arguments: ["", "abc", String(repeating: "zz", count: 32), String(repeating: "ab", count: 31)])
    func badKeys(_ text: String) {
        do {
            _ = try EncryptedRetrieval.key(hex: text)
            Issue.record("accepted \(text.debugDescription)")
        } catch let error as BuckiaError {
            #expect(error.code == .invalidConfiguration)
            #expect(text.isEmpty || !error.description.contains(text))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("the cache evicts the least recently used entries to stay within its bytes")
    func cacheIsBoundedLRU() {
        let cache = ChunkCache(capacity: 300)
        cache.insert(Data(count: 100), for: "a")
        cache.insert(Data(count: 100), for: "b")
        cache.insert(Data(count: 100), for: "c")
        #expect(cache.value(for: "a") != nil)  // a is now the most recent
        cache.insert(Data(count: 100), for: "d")  // evicts b, the least recent
        #expect(cache.value(for: "b") == nil)
        #expect(cache.value(for: "a") != nil && cache.value(for: "c") != nil && cache.value(for: "d") != nil)
        cache.insert(Data(count: 400), for: "huge")
        #expect(cache.value(for: "huge") == nil, "an entry larger than the cache is not kept")
        #expect(cache.statistics.bytes == 300 && cache.statistics.count == 3 && cache.statistics.evictions == 1)
    }

    @Test("the cache stays within its bytes under 64 concurrent tasks")
    func cacheUnderConcurrency() async throws {
        let scratch = try Scratch()
        let base = ComposableFileSystemChunkStorage(baseURL: scratch.url, durability: .none)
        var identifiers: [ChunkIdentifier] = []
        for index in 0..<40 { identifiers.append(try await base.storeChunk(noise(1000, seed: UInt64(index)))) }
        let all = identifiers
        let cached = CachedRetrieval(wrapped: base.retrieval, capacityBytes: 10_000)
        let store = ComposedChunkStorage(organization: base.organization, retrieval: cached)
        let wrong = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<64 {
                group.addTask {
                    for step in 0..<50 {
                        // A hot set of 8 that fits, and every tenth read anywhere, which evicts.
                        let identifier = step % 10 == 9 ? all[(task * 7 + step) % all.count] : all[(task + step) % 8]
                        let data = try await store.readChunk(identifier)
                        if data.map({ !identifier.matches($0) }) ?? true { wrong.withLock { $0 += 1 } }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(wrong.withLock { $0 } == 0)
        let statistics = cached.statistics
        #expect(statistics.bytes <= 10_000 && statistics.count <= 10)
        #expect(statistics.hits + statistics.misses == 64 * 50 && statistics.hits > 0)
    }

    @Test("verification beneath compression keeps a checksum header and still catches damage")
    func verificationBeneathATransform() async throws {
        let scratch = try Scratch()
        let base = ComposableFileSystemChunkStorage(baseURL: scratch.url, organization: FlatOrganization(), durability: .none)
        let store = try base.decorated { VerifiedRetrieval(wrapped: $0, organization: base.organization) }.decorated { try CompressedRetrieval(wrapped: $0) }
        let identifier = try await store.storeChunk(Data(String(repeating: "verify ", count: 300).utf8))
        var stored = try Data(contentsOf: scratch.path(identifier.id))
        #expect(stored.prefix(3) == Data("BKV".utf8))
        stored[stored.count - 1] ^= 1
        try stored.write(to: scratch.path(identifier.id))
        await #expect(throws: BuckiaError.self) { try await store.readChunk(identifier) }
    }
}

@Suite("Chunk packs")
struct ChunkPackTests {
    /// A pack of three chunks and the store it came from.
    static func makePack(_ scratch: Scratch) async throws -> (URL, [ChunkIdentifier]) {
        let source = ComposableFileSystemChunkStorage(baseURL: scratch.path("source"), durability: .none)
        var identifiers: [ChunkIdentifier] = []
        for index in 0..<3 { identifiers.append(try await source.storeChunk(noise(40 + index * 30, seed: UInt64(index)))) }
        let pack = scratch.path("chunks.pack")
        _ = try await ChunkPack.export(identifiers, from: source, to: pack)
        return (pack, identifiers)
    }

    @Test("a pack cut short at any byte stores nothing and says it is truncated")
    func everyTruncationIsRefused() async throws {
        let scratch = try Scratch()
        let (pack, identifiers) = try await Self.makePack(scratch)
        let bytes = try Data(contentsOf: pack)
        let target = ComposableFileSystemChunkStorage(baseURL: scratch.path("target"), durability: .none)
        for length in 0..<bytes.count {
            let cut = scratch.path("cut.pack")
            try bytes.prefix(length).write(to: cut)
            do {
                _ = try await ChunkPack.import(from: cut, into: target)
                Issue.record("a pack cut at \(length) of \(bytes.count) bytes imported")
            } catch let error as BuckiaError {
                #expect(error.code == .corrupt, "cut at \(length): \(error)")
            }
        }
        for identifier in identifiers { #expect(try await !target.chunkExists(identifier)) }
        let summary = try await ChunkPack.import(from: pack, into: target)
        #expect(summary.chunkCount == 3)
        for identifier in identifiers { #expect(try await target.readChunk(identifier).map(identifier.matches) == true) }
    }

    @Test("any flipped byte, or bytes after the trailer, is refused")
    func tamperingIsRefused() async throws {
        let scratch = try Scratch()
        let (pack, _) = try await Self.makePack(scratch)
        let bytes = try Data(contentsOf: pack)
        let target = ComposableFileSystemChunkStorage(baseURL: scratch.path("target"), durability: .none)
        for offset in stride(from: 0, to: bytes.count, by: 7) {
            var altered = bytes
            altered[offset] ^= 0x40
            let file = scratch.path("altered.pack")
            try altered.write(to: file)
            await #expect(throws: BuckiaError.self, "flipped byte \(offset)") { try await ChunkPack.import(from: file, into: target) }
        }
        let extended = scratch.path("extended.pack")
        try (bytes + Data([0])).write(to: extended)
        await #expect(throws: BuckiaError.self) { try await ChunkPack.import(from: extended, into: target) }
        #expect(try await target.enumeration?.allChunks().isEmpty == true)
    }

    @Test("exporting a chunk the store lacks is a notFound error and leaves no file")
    func exportOfMissingChunk() async throws {
        let scratch = try Scratch()
        let store = ComposableFileSystemChunkStorage(baseURL: scratch.path("store"), durability: .none)
        let missing = try ChunkIdentifier.of(Data("missing".utf8))
        let pack = scratch.path("missing.pack")
        await #expect(throws: BuckiaError.self) { try await ChunkPack.export([missing], from: store, to: pack) }
        #expect(!FileManager.default.fileExists(atPath: pack.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter { $0.hasSuffix(".tmp") }.isEmpty)
    }
}

@Suite("Chunk manifests and files")
struct ChunkManifestTests {
    static let valid = #"{"chunker":{"algorithm":"fastcdc-2020","averageSize":65536,"maximumSize":262144,"minimumSize":16384,"normalization":1},"chunks":[{"id":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","size":5}],"created":"2026-01-01T00:00:00Z","format":"buckia-chunk-manifest","hashAlgorithm":"sha256","size":5,"version":1}"#

    @Test("a well-formed manifest decodes")
    func validDecodes() throws {
        let manifest = try ChunkManifest.decode(Data(Self.valid.utf8))
        #expect(manifest.size == 5 && manifest.chunks.count == 1)
        #expect(try ChunkManifest.decode(manifest.encoded()) == manifest)
    }

    @Test("a damaged or hostile manifest is a corrupt error", arguments: [
        ("sizes do not add up", #""size":5,"version""#, #""size":6,"version""#),
        ("wrong format", "buckia-chunk-manifest", "something-else"),
        ("future version", #""version":1"#, #""version":2"#),
        ("identifier with a path", "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "../../../../etc/passwd"),
        ("negative chunk size", #""size":5}"#, #""size":-5}"#),
        ("chunk larger than the chunker's maximum", #""size":5}],"created""#, #""size":300000}],"created""#),
        ("impossible chunker", #""averageSize":65536"#, #""averageSize":3"#),
        ("not JSON", "{", "["),
        ("SHA-1 chunk in a SHA-256 manifest", "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"),
    ])
    func hostileManifests(_ what: String, _ original: String, _ replacement: String) {
        let text = Self.valid.replacingOccurrences(of: original, with: replacement)
        #expect(text != Self.valid, "the case \(what) changed nothing")
        do {
            _ = try ChunkManifest.decode(Data(text.utf8))
            Issue.record("\(what): decoded")
        } catch let error as BuckiaError {
            #expect(error.code == .corrupt, "\(what): \(error)")
        } catch {
            Issue.record("\(what): \(error)")
        }
    }

    @Test("restoring with a chunk missing fails with notFound and leaves the destination as it was")
    func restoreWithMissingChunk() async throws {
        let scratch = try Scratch()
        let store = ComposableFileSystemChunkStorage(baseURL: scratch.path("store"), durability: .none)
        let files = ChunkedFileStore(storage: store, chunker: try FastCDC(averageSize: 1024))
        let stored = try await files.store(noise(50_000, seed: 3))
        try await store.deleteChunk(stored.manifest.chunks[5].id)
        let destination = scratch.path("file")
        try Data("previous".utf8).write(to: destination)
        do {
            try await files.restore(stored.manifest, to: destination)
            Issue.record("restored without a chunk")
        } catch let error as BuckiaError {
            #expect(error.code == .notFound)
        }
        #expect(try Data(contentsOf: destination) == Data("previous".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).sorted() == ["file", "store"])
        #expect(try await files.missingChunks(stored.manifest) == [stored.manifest.chunks[5].id])
    }

    @Test("statistics count what was written and reused, repeats within the file included")
    func statistics() async throws {
        let scratch = try Scratch()
        let files = ChunkedFileStore(storage: ComposableFileSystemChunkStorage(baseURL: scratch.url, durability: .none), chunker: try FastCDC(averageSize: 1024, minimumSize: 256, maximumSize: 4096))
        let block = noise(40_000, seed: 9)
        let first = try await files.store(block + block)
        #expect(first.statistics.bytes == 80_000)
        #expect(first.statistics.newBytes + first.statistics.reusedBytes == 80_000)
        #expect(first.statistics.reusedBytes > 30_000, "the repeated half should mostly be reused: \(first.statistics)")
        #expect(first.statistics.chunksWritten == first.manifest.uniqueChunks.count)
        let empty = try await files.store(Data())
        #expect(empty.manifest.chunks.isEmpty && empty.statistics == ChunkStoreStatistics())
        #expect(try await files.data(for: empty.manifest).isEmpty)
    }
}

@Suite("File-system chunk store temporaries")
struct ChunkTemporaryTests {
    @Test("walking the store removes a killed writer's temporary and leaves a live one's")
    func sweepOnWalk() async throws {
        let scratch = try Scratch()
        let store = ComposableFileSystemChunkStorage(baseURL: scratch.url, durability: .none)
        let identifier = try await store.storeChunk(Data("kept".utf8))
        let folder = scratch.url.appendingPathComponent(String(identifier.id.prefix(2)))
        // A killed writer's: bytes, no lock.
        let abandoned = folder.appendingPathComponent(Temporaries.makeName())
        try Data("half a chunk".utf8).write(to: abandoned)
        // A live writer's: bytes, locked and open.
        let live = folder.appendingPathComponent(Temporaries.makeName())
        let file = try LocalFile.createExclusive(live)
        file.lockAsTemporary()
        try file.write(Data("being written".utf8))
        #expect(try await store.enumeration?.allChunks() == [identifier])
        #expect(!FileManager.default.fileExists(atPath: abandoned.path), "the abandoned temporary is still there")
        #expect(FileManager.default.fileExists(atPath: live.path), "a live writer's temporary was removed")
        try file.close()
    }
}

@Suite("Chunk compression sampling")
struct ChunkCompressionSamplingTests {
    /// Counts the bytes the wrapped store receives.
    static func stored(_ data: Data, sampling: Bool) async throws -> (size: Int, transforms: [String]?) {
        let scratch = try Scratch()
        let recorder = MetadataRecorder(FileSystemRetrieval(baseURL: scratch.url))
        let store = ComposedChunkStorage(organization: FlatOrganization(), retrieval: try CompressedRetrieval(wrapped: recorder, sampling: sampling))
        let identifier = try await store.storeChunk(data)
        #expect(try await store.readChunk(identifier) == data)
        return (try Data(contentsOf: scratch.path(identifier.id)).count, recorder.recorded.withLock { $0[identifier.id]?.transforms })
    }

    @Test("an incompressible start keeps the chunk as it is; a compressible one compresses the whole")
    func sampling() async throws {
        let text = Data(String(repeating: "sampled text compresses well. ", count: 3000).utf8)
        let noisy = noise(90_000, seed: 21)
        #expect(try await Self.stored(text, sampling: true).transforms == ["zlib"])
        #expect(try await Self.stored(noisy, sampling: true).transforms == ["stored"])
        // Random start, compressible rest: sampling keeps it as it is; without sampling it shrinks.
        let mixed = noise(20_000, seed: 22) + Data(count: 80_000)
        let sampled = try await Self.stored(mixed, sampling: true)
        let whole = try await Self.stored(mixed, sampling: false)
        #expect(sampled.transforms == ["stored"] && sampled.size == mixed.count + 12)
        #expect(whole.transforms == ["zlib"] && whole.size < 30_000)
    }
}

/// The file-system store's chunk writes that block — a synced one, or one larger than a few
/// system calls move — run on Buckia's blocking-work threads (issue 23), which refuse a job a
/// cancelled task asks for; a small unsynced write runs on the calling task and completes.
@Suite("Chunk files written off the cooperative pool")
struct ChunkBlockingWorkTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let durability: FileSystemRetrieval.Durability
        let size: Int
        let offThePool: Bool
        var testDescription: String { "\(durability), \(size) bytes" }
    }

    @Test(arguments: [
        Case(durability: .eachChunk, size: 100, offThePool: true),
        Case(durability: .none, size: 1 << 20, offThePool: true),
        Case(durability: .none, size: 100, offThePool: false),
    ])
    func cancelledTaskWrites(_ example: Case) async throws {
        let scratch = try Scratch()
        let retrieval = FileSystemRetrieval(baseURL: scratch.url, durability: example.durability)
        let path = "ab/cdef"
        let data = Data(repeating: 7, count: example.size)
        let task = Task { try await retrieval.writeChunk(data, at: path, metadata: nil) }
        task.cancel()
        let result = await task.result
        let stored = try await retrieval.readChunk(at: path)
        if example.offThePool {
            #expect((try? result.get()) == nil && ((result.failure as? BuckiaError)?.code == .cancelled))
            #expect(stored == nil, "nothing stored")
        } else {
            #expect((try? result.get()) != nil)
            #expect(stored == data)
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
