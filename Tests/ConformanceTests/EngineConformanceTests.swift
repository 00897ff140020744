import Buckia
import BuckiaConformance
import Foundation
import Testing

/// Every built-in engine through every engine scenario, one test case per pair.
@Suite("Engine conformance")
struct EngineConformanceTests {
    @Test("memory engine", arguments: EngineConformance.scenarios)
    func memory(_ scenario: EngineScenario) async throws {
        // One engine per scenario: "opening again" returns the same in-memory store.
        let engine = MemoryStorageEngine()
        let outcome = await EngineConformance.run(scenario) { engine }
        if case .skipped(let reason) = outcome {
            FileHandle.standardError.write(Data("⊘ skipped memory engine × \(scenario.name): \(reason)\n".utf8))
            try Test.cancel(Comment(rawValue: "\(scenario.name): \(reason)"))
        }
        #expect(outcome == .passed, "\(scenario.contract) — \(outcome)")
    }

    @Test("disk engine, flat layout", arguments: EngineConformance.scenarios)
    func diskFlat(_ scenario: EngineScenario) async throws {
        await runDisk(scenario, layout: .flat)
    }

    @Test("disk engine, git-style layout", arguments: EngineConformance.scenarios)
    func diskGitStyle(_ scenario: EngineScenario) async throws {
        await runDisk(scenario, layout: .gitStyle)
    }

    /// Runs a scenario over a fresh directory; each `open` is a new engine over the same
    /// directory, which is how persistence is checked. No scenario may be skipped.
    private func runDisk(_ scenario: EngineScenario, layout: StorageLayout) async {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-disk-conformance-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outcome = await EngineConformance.run(scenario) { try DiskStorageEngine(directory: directory, layout: layout) }
        #expect(outcome == .passed, "\(scenario.contract) — \(outcome)")
    }
}
