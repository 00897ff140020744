import Buckia
import BuckiaConformance
import Foundation
import Testing

/// Every built-in provider through every provider scenario, one test case per pair.
@Suite("Provider conformance")
struct ProviderConformanceTests {
    @Test("memory provider", arguments: ProviderConformance.scenarios)
    func memory(_ scenario: ProviderScenario) async throws {
        try await check(scenario, on: MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)))
    }

    @Test("local provider", arguments: ProviderConformance.scenarios)
    func local(_ scenario: ProviderScenario) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-local-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let configuration = BuckiaConfiguration(provider: .local, options: ["root": root.path])
        try await check(scenario, on: ProviderRegistry.builtIn.makeProvider(for: configuration))
    }
}

/// Runs one scenario, reporting a skip as a cancelled test case and a failure as an issue.
func check(_ scenario: ProviderScenario, on provider: any StorageProvider) async throws {
    let outcome = await ProviderConformance.run(scenario, on: provider)
    if case .skipped(let reason) = outcome {
        // Swift Testing 6.3's console shows a cancelled case as passed; say it was skipped.
        FileHandle.standardError.write(Data("⊘ skipped \(provider.providerType) × \(scenario.name): \(reason)\n".utf8))
        try Test.cancel(Comment(rawValue: "\(scenario.name): \(reason)"))
    }
    #expect(outcome == .passed, "\(scenario.contract) — \(outcome)")
}

/// The third-party example from Docs/WritingAProvider.md, registered and run like a built-in.
@Suite("Third-party provider conformance")
struct ThirdPartyConformanceTests {
    @Test("flatfolder provider (Docs/WritingAProvider.md)", arguments: ProviderConformance.scenarios)
    func flatFolder(_ scenario: ProviderScenario) async throws {
        var registry = ProviderRegistry.builtIn
        try registry.register(FlatFolderProvider.self)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-flat-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = BuckiaConfiguration(provider: .flatFolder, options: ["folder": folder.path])
        try await check(scenario, on: registry.makeProvider(for: configuration))
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
