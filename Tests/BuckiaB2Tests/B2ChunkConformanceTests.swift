import BuckiaB2
import BuckiaChunks
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaHTTP
import Foundation
import Testing

/// Every chunk-store scenario against B2 (the shared emulator), each under a prefix of its own.
@Suite("B2 chunk conformance (emulator)")
struct B2ChunkConformanceTests {
    @Test("chunk store: b2", arguments: ChunkStoreConformance.scenarios)
    func store(_ scenario: ChunkStoreScenario) async throws {
        let emulator = try await SharedB2.emulator.value
        let provider = try B2Provider(settings: B2Settings.resolve(emulator.configuration(bucket: "buckia-private", options: SharedB2.smallParts), environment: [:]))
        let prefix = "chunks-\(UUID().uuidString.lowercased())/"
        try await scenario.check("b2 (emulator)") { try ProviderChunkStorage(provider: provider, prefix: prefix) }
    }
}

@Suite("B2 chunk sharing (emulator)")
struct B2ChunkSharingTests {
    @Test("a shared chunk URL is a download authorization that serves the stored bytes")
    func sharedURL() async throws {
        let emulator = try await SharedB2.emulator.value
        let provider = try B2Provider(settings: B2Settings.resolve(emulator.configuration(bucket: "buckia-private", options: SharedB2.smallParts), environment: [:]))
        let store = try ProviderChunkStorage(provider: provider, prefix: "shared-\(UUID().uuidString.lowercased())/")
        let data = Data("b2 chunk \(UUID().uuidString)".utf8)
        let identifier = try await store.storeChunk(data)
        let url = try await #require(store.sharing).sharedURL(for: identifier, expires: .seconds(300))
        let response = try await HTTPClient(configuration: .init(retryPolicy: .none)).send(HTTPRequest(.get, url))
        #expect(response.data == data)
    }
}
