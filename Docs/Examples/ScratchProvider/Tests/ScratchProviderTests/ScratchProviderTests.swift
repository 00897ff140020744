import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import Foundation
import ScratchProvider
import Testing

struct ScratchProviderTests {
    /// Each scenario reports as its own test case; one the provider's capabilities rule out is
    /// recorded as skipped, with the reason.
    @Test("The scratch provider passes every conformance scenario", arguments: ProviderConformance.scenarios)
    func conformance(_ scenario: ProviderScenario) async throws {
        // A space of its own per scenario: the suite opens several instances over it, and
        // scenarios running in parallel never meet.
        let configuration = BuckiaConfiguration(provider: .scratch, options: ["space": "conformance-\(UUID().uuidString)"])
        try await scenario.check(.plugin(ScratchProvider.self, configuration: configuration))
    }

    @Test("Providers configured with the same space share objects, and no other space sees them")
    func spacesAreSharedByName() async throws {
        var registry = ProviderRegistry()
        try registry.register(ScratchProvider.self)
        func open(_ space: String) throws -> any StorageProvider {
            try registry.makeProvider(for: BuckiaConfiguration(provider: .scratch, options: ["space": space]))
        }
        let space = "shared-\(UUID().uuidString)"
        let writer = try open(space), reader = try open(space), stranger = try open("other-\(UUID().uuidString)")

        try await writer.uploadData(Data("shared".utf8), remotePath: "notes/today.txt")

        #expect(try await reader.readData(remotePath: "notes/today.txt") == Data("shared".utf8))
        #expect(try await stranger.stat(remotePath: "notes/today.txt") == nil)
    }
}
