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
        try await checkEngine(scenario, named: "memory") { engine }
    }

    @Test("sqlite engine", arguments: EngineConformance.scenarios)
    func sqlite(_ scenario: EngineScenario) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sqlite-engine-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let registry = EngineRegistry.builtIn
        try await checkEngine(scenario, named: "sqlite") {
            try await registry.makeEngine(for: EngineConfiguration(type: .sqlite, directory: directory.path))
        }
    }

    @Test("disk engine, flat layout", arguments: EngineConformance.scenarios)
    func diskFlat(_ scenario: EngineScenario) async throws {
        try await runDisk(scenario, layout: .flat)
    }

    @Test("disk engine, git-style layout", arguments: EngineConformance.scenarios)
    func diskGitStyle(_ scenario: EngineScenario) async throws {
        try await runDisk(scenario, layout: .gitStyle)
    }

    /// Runs a scenario over a fresh directory; each `open` is a new engine over the same
    /// directory, which is how persistence is checked.
    private func runDisk(_ scenario: EngineScenario, layout: StorageLayout) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-disk-conformance-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await checkEngine(scenario, named: "disk (\(layout))") { try DiskStorageEngine(directory: directory, layout: layout) }
    }
}

/// Runs one engine scenario, reporting a skip as a cancelled test case and a failure as an issue.
func checkEngine(
    _ scenario: EngineScenario, named name: String, open: @escaping @Sendable () async throws -> any StorageEngine
) async throws {
    let outcome = await EngineConformance.run(scenario, open: open)
    if case .skipped(let reason) = outcome {
        FileHandle.standardError.write(Data("⊘ skipped \(name) engine × \(scenario.name): \(reason)\n".utf8))
        try Test.cancel(Comment(rawValue: "\(scenario.name): \(reason)"))
    }
    #expect(outcome == .passed, "\(scenario.contract) — \(outcome)")
}
