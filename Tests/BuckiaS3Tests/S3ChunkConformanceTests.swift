import BuckiaChunkEngine
import BuckiaChunks
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaDiskEngine
import BuckiaS3
import Foundation
import Testing

/// Every chunk-store scenario against S3 (moto), and the chunk engine through every engine
/// scenario with its chunks in S3; each scenario on a bucket of its own.
@Suite("S3 chunk conformance (moto)")
struct S3ChunkConformanceTests {
    @Test("chunk store: s3", arguments: ChunkStoreConformance.scenarios)
    func store(_ scenario: ChunkStoreScenario) async throws {
        let (provider, _, _) = try await makeS3Provider(auth: false, options: ["vendor": "moto"])
        try await scenario.check("s3 (moto)") { try ProviderChunkStorage(provider: provider, prefix: "chunks/") }
    }

    @Test("chunk engine: s3", arguments: EngineConformance.scenarios)
    func engine(_ scenario: EngineScenario) async throws {
        let (provider, _, _) = try await makeS3Provider(auth: false)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-s3-chunk-index-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await scenario.check("chunk (s3)") { now in
            ChunkStorageEngine(
                chunks: try ProviderChunkStorage(provider: provider, prefix: "values"),
                index: try DiskStorageEngine(directory: folder, now: now), chunker: try FastCDC(averageSize: 4096))
        }
    }
}

@Suite("S3 chunk sharing and batched existence (moto)")
struct S3ChunkSharingTests {
    @Test("a shared chunk URL serves the stored bytes to plain curl; the store's metadata comes back")
    func sharedURL() async throws {
        let (provider, _, _) = try await makeS3Provider(auth: false)
        let store = try ProviderChunkStorage(provider: provider, prefix: "chunks/")
        let data = Data("shared chunk \(UUID().uuidString)".utf8)
        let identifier = try await store.storeChunk(data, contentType: "text/plain")
        let sharing = try #require(store.sharing, "an S3 store shares through presigned URLs")
        let url = try await sharing.sharedURL(for: identifier, expires: .seconds(300))
        #expect(try runTool("curl", ["-sf", url.absoluteString]) == String(decoding: data, as: UTF8.self))
        let metadata = try #require(try await store.readMetadata(identifier))
        #expect(metadata.size == data.count && metadata.hashAlgorithm == .sha256 && metadata.contentType == "text/plain")
    }

    /// Counts the stats and listings that reach S3.
    struct Counting: ForwardingStorageProvider {
        let base: any StorageProvider
        let counts = Locked<(stats: Int, listings: Int)>((0, 0))
        func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
            counts.withLock { $0.stats += 1 }
            return try await base.stat(remotePath: remotePath)
        }
        func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
            counts.withLock { $0.listings += 1 }
            return try await base.makeLister(request)
        }
    }

    @Test("a batch crowding one folder is answered by one listing of it, a small one by stats; the answers are right either way")
    func batchedExistenceLists() async throws {
        let (s3, _, _) = try await makeS3Provider(auth: false)
        let provider = Counting(base: s3)
        let store = try ProviderChunkStorage(provider: provider, organization: GitStyleOrganization(directoryDepth: 1))
        // Chunks until five share a folder (the first two hex digits).
        var byFolder: [String: [Data]] = [:]
        var index = 0
        while byFolder.values.allSatisfy({ $0.count < 5 }) {
            let data = Data("chunk \(index)".utf8)
            byFolder[String(try ChunkIdentifier.of(data).id.prefix(2)), default: []].append(data)
            index += 1
        }
        let crowded = try #require(byFolder.values.first { $0.count >= 5 })
        var present: [ChunkIdentifier] = []
        for data in crowded.prefix(3) { present.append(try await store.storeChunk(data)) }
        let absent = try crowded.dropFirst(3).map { try ChunkIdentifier.of($0) }
        let answers = try await store.chunkExists(present + absent)
        #expect(present.allSatisfy { answers[$0] == true } && absent.allSatisfy { answers[$0] == false })
        #expect(provider.counts.withLock { $0 } == (0, 1), "five in one folder: one listing, no stat")
        // Two in the folder are too few to list: one stat each.
        let single = try await store.chunkExists([present[0], absent[0]])
        #expect(single == [present[0]: true, absent[0]: false])
        #expect(provider.counts.withLock { $0 } == (2, 1))
    }
}
