import BuckiaChunks
import BuckiaCore
import Foundation

/// A scenario for a chunk store: see ``ChunkStoreConformance``.
public struct ChunkStoreScenario: ConformanceScenario {
    public let name: String
    public let contract: String
    public let requires: Set<Capability>
    public let excludedBy: Set<Capability>
    public let body: @Sendable (ChunkStoreScenarioContext) async throws -> Void

    public init(
        _ name: String, contract: String, requires: Set<Capability>, excludedBy: Set<Capability>,
        body: @escaping @Sendable (ChunkStoreScenarioContext) async throws -> Void
    ) {
        (self.name, self.contract, self.requires, self.excludedBy, self.body) = (name, contract, requires, excludedBy, body)
    }
}

/// What a chunk-store scenario works with: the store under test and a scratch folder.
public struct ChunkStoreScenarioContext: Sendable {
    let opener: @Sendable () async throws -> any ChunkStorageComposable
    /// A folder of the scenario's own for pack files; removed after the scenario.
    public let scratch: URL

    /// Opens the store under test, undecorated. Calling it again opens the same storage.
    public func open() async throws -> any ChunkStorageComposable { try await opener() }
}

/// The chunk-store half of the conformance suite: every chunk store, built-in or a third
/// party's, through the same scenarios.
///
/// The factory opens the store without decorators; scenarios add compression, encryption,
/// caching and verification themselves, in every order. With BuckiaConformanceTesting:
///
/// ```swift
/// @Test(arguments: ChunkStoreConformance.scenarios)
/// func conformance(_ scenario: ChunkStoreScenario) async throws {
///     let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
///     defer { try? FileManager.default.removeItem(at: folder) }
///     try await scenario.check("my store") { MyChunkStorage(folder: folder) }
/// }
/// ```
public enum ChunkStoreConformance {
    /// Every chunk-store scenario, in a stable order.
    public static var scenarios: [ChunkStoreScenario] { ChunkStoreScenarios.all }

    /// Runs one scenario; `open` must open empty storage the first time and the same storage
    /// after that.
    public static func run(_ scenario: ChunkStoreScenario, open: @escaping @Sendable () async throws -> any ChunkStorageComposable) async -> ScenarioOutcome {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-chunk-scenario-\(UUID().uuidString)", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        } catch {
            return .failed(message: "Could not create a scratch folder: \(error)")
        }
        defer { try? FileManager.default.removeItem(at: scratch) }
        return await scenario.outcome(in: ChunkStoreScenarioContext(opener: open, scratch: scratch))
    }

    /// Runs every scenario in order against the store `open` opens, and reports each.
    public static func runAll(
        subject: String, scenarios: [ChunkStoreScenario] = scenarios, open: @escaping @Sendable () async throws -> any ChunkStorageComposable,
        progress: (@Sendable (ChunkStoreScenario, ScenarioOutcome, Duration) -> Void)? = nil
    ) async -> ConformanceReport {
        await ConformanceReport.collect(subject: subject, scenarios: scenarios, progress: progress) { await run($0, open: open) }
    }
}
