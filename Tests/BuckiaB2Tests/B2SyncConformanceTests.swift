import BuckiaB2
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaLocal
import BuckiaSyncConformance
import Foundation
import Testing

/// Every sync scenario between a local folder and B2 (the shared emulator), each on its own.
@Suite("B2 sync conformance (emulator)")
struct B2SyncConformanceTests {
    @Test("local folder ↔ b2", arguments: SyncConformance.scenarios)
    func b2(_ scenario: SyncScenario) async throws {
        let emulator = try await SharedB2.emulator.value
        let provider = try B2Provider(settings: B2Settings.resolve(emulator.configuration(bucket: "buckia-private", options: SharedB2.smallParts), environment: [:]))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-b2-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await scenario.check(local: LocalProvider(root: folder), remote: provider)
    }
}
