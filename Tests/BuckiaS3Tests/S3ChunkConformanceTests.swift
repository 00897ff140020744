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
        let (provider, _, _) = try await makeS3Provider(auth: false)
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
