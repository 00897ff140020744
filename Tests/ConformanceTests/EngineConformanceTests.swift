import Buckia
import BuckiaConformance
import BuckiaConformanceTesting
import Foundation
import Testing

/// Every built-in engine through every engine scenario, one test case per pair; each engine
/// keeps time by the scenario's clock.
@Suite("Engine conformance")
struct EngineConformanceTests {
    @Test("memory engine", arguments: EngineConformance.scenarios)
    func memory(_ scenario: EngineScenario) async throws {
        // One engine per scenario: "opening again" returns the same in-memory store.
        let engine = Locked<MemoryStorageEngine?>(nil)
        try await scenario.check("memory") { now in
            engine.withLock { engine in
                if let engine { return engine }
                let made = MemoryStorageEngine(now: now)
                engine = made
                return made
            }
        }
    }

    @Test("sqlite engine", arguments: EngineConformance.scenarios)
    func sqlite(_ scenario: EngineScenario) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sqlite-engine-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await scenario.check("sqlite") { now in try SQLiteStorageEngine(directory: directory, now: now) }
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
        try await scenario.check("disk (\(layout))") { now in try DiskStorageEngine(directory: directory, layout: layout, now: now) }
    }
}
