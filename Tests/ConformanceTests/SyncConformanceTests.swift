import Buckia
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaSyncConformance
import Foundation
import Testing

/// Every sync scenario between a local folder and each built-in provider that runs here
/// without a server (S3 runs them against moto in BuckiaS3Tests).
@Suite("Sync conformance")
struct SyncConformanceTests {
    @Test("local folder ↔ local provider", arguments: SyncConformance.scenarios)
    func localToLocal(_ scenario: SyncScenario) async throws {
        try await withFolders(2) { folders in
            try await scenario.check(local: LocalProvider(root: folders[0]), remote: LocalProvider(root: folders[1]))
        }
    }

    @Test("local folder ↔ memory provider", arguments: SyncConformance.scenarios)
    func localToMemory(_ scenario: SyncScenario) async throws {
        try await withFolders(1) { folders in
            try await scenario.check(local: LocalProvider(root: folders[0]), remote: MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)))
        }
    }

    @Test("memory provider ↔ local provider (no local file store on the first side)", arguments: SyncConformance.scenarios)
    func memoryToLocal(_ scenario: SyncScenario) async throws {
        try await withFolders(1) { folders in
            try await scenario.check(local: MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)), remote: LocalProvider(root: folders[0]))
        }
    }
}

/// Runs `body` with `count` fresh folders, removed afterwards.
func withFolders(_ count: Int, _ body: ([URL]) async throws -> Void) async throws {
    let folders = (0..<count).map { _ in FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sync-\(UUID().uuidString)") }
    defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
    try await body(folders)
}
