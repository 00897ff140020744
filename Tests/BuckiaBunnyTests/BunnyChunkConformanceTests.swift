import BuckiaBunny
import BuckiaChunks
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import Foundation
import Testing

/// Every chunk-store scenario against Bunny (the shared emulator), each under a prefix of its own.
@Suite("Bunny chunk conformance (emulator)")
struct BunnyChunkConformanceTests {
    @Test("chunk store: bunny", arguments: ChunkStoreConformance.scenarios)
    func store(_ scenario: ChunkStoreScenario) async throws {
        let emulator = try await SharedBunny.emulator.value
        let provider = BunnyProvider(settings: try BunnySettings.resolve(emulator.configuration(), environment: [:]))
        let prefix = "chunks-\(UUID().uuidString.lowercased())/"
        try await scenario.check("bunny (emulator)") { try ProviderChunkStorage(provider: provider, prefix: prefix) }
    }
}
