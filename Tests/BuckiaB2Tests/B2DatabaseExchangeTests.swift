import BuckiaB2
import BuckiaClient
import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// The two-user diff exchange (``DatabaseExchange``) through a B2 bucket on the emulator. B2 has
/// no conditional write: a diff is sent after a check that the name is free.
@Suite("Diff exchange between users over B2 (emulator)")
struct B2DatabaseExchangeTests {
    @Test("Two users exchange diffs through the B2 emulator and end equal")
    func emulator() async throws {
        let emulator = try await B2Emulator.start(buckets: ["buckia-exchange"])
        defer { emulator.stop() }
        var registry = ProviderRegistry()
        try registry.register(B2Provider.self)
        let client = try await BuckiaClient(configuration: emulator.configuration(bucket: "buckia-exchange"), registry: registry, environment: [:])
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-b2-exchange-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(!client.provider.capabilities.supports(.conditionalWrite))
        let problems = try await DatabaseExchange.run(through: client, root: root)
        #expect(problems.isEmpty, "\(problems)")
    }
}
