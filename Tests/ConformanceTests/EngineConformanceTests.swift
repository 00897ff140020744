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
}
