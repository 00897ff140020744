import Buckia
import BuckiaConformance
import BuckiaConformanceTesting
import Foundation
import Testing

/// Every built-in provider through every provider scenario, one test case per pair, each
/// built through the registry from its configuration (so reopening, configuration and
/// registry scenarios run too).
@Suite("Provider conformance")
struct ProviderConformanceTests {
    @Test("memory provider", arguments: ProviderConformance.scenarios)
    func memory(_ scenario: ProviderScenario) async throws {
        try await scenario.check(.plugin(MemoryProvider.self, configuration: BuckiaConfiguration(provider: .memory)))
    }

    @Test("local provider", arguments: ProviderConformance.scenarios)
    func local(_ scenario: ProviderScenario) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-local-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try await scenario.check(.plugin(LocalProvider.self, configuration: BuckiaConfiguration(provider: .local, options: ["root": root.path])))
    }
}

/// The third-party example from Docs/WritingAProvider.md, registered and run like a built-in.
@Suite("Third-party provider conformance")
struct ThirdPartyConformanceTests {
    @Test("flatfolder provider (Docs/WritingAProvider.md)", arguments: ProviderConformance.scenarios)
    func flatFolder(_ scenario: ProviderScenario) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-flat-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = BuckiaConfiguration(provider: .flatFolder, options: ["folder": folder.path])
        try await scenario.check(.plugin(FlatFolderProvider.self, configuration: configuration, registry: .builtIn))
    }

    @Test("The guide shows the example exactly as it is compiled")
    func guideMatchesSource() throws {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let source = try String(contentsOf: tests.appendingPathComponent("FlatFolderProvider.swift"), encoding: .utf8)
        let guide = try String(
            contentsOf: tests.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Docs/WritingAProvider.md"),
            encoding: .utf8)
        #expect(guide.contains("```swift\n" + source + "```"), "Docs/WritingAProvider.md must embed FlatFolderProvider.swift verbatim")
    }
}
