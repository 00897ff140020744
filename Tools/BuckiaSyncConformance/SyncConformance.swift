import BuckiaConformance
import BuckiaCore
import BuckiaSync
import Foundation

/// A scenario for sync between two providers: see ``SyncConformance``.
public struct SyncScenario: ConformanceScenario {
    public typealias Feature = Capability
    public let name: String
    public let contract: String
    public let requires: Set<Feature>
    public let excludedBy: Set<Feature>
    public let body: @Sendable (SyncScenarioContext) async throws -> Void

    public init(
        _ name: String, contract: String, requires: Set<Feature>, excludedBy: Set<Feature>,
        body: @escaping @Sendable (SyncScenarioContext) async throws -> Void
    ) {
        (self.name, self.contract, self.requires, self.excludedBy, self.body) = (name, contract, requires, excludedBy, body)
    }
}

/// The sync half of the conformance suite: two-way, push and pull scenarios between a local
/// side and the provider under test, each on prefixes of its own.
///
/// ```swift
/// @Test(arguments: SyncConformance.scenarios)
/// func sync(_ scenario: SyncScenario) async throws {
///     try await scenario.check(local: LocalProvider(root: scratchFolder), remote: MyProvider(context: context))
/// }
/// ```
public enum SyncConformance {
    /// Every sync scenario, in a stable order.
    public static var scenarios: [SyncScenario] { twoWayScenarios + oneWayScenarios + safetyScenarios + renameScenarios }

    /// Runs one scenario between `local` and `remote` (fresh prefixes on each, removed after).
    /// The scenario is skipped when either side lacks a capability it needs.
    public static func run(_ scenario: SyncScenario, local: any StorageProvider, remote: any StorageProvider) async -> ScenarioOutcome {
        await run(scenario, local: local, remote: remote) { local, remote, options, store in
            try await SyncEngine(local: local, remote: remote, options: options, stateStore: store).run()
        }
    }

    /// Runs one scenario with its syncs made by `runner` (the mutation harness's broken engines).
    package static func run(_ scenario: SyncScenario, local: any StorageProvider, remote: any StorageProvider, runner: @escaping SyncRunner) async -> ScenarioOutcome {
        let features = local.capabilities.features.intersection(remote.capabilities.features)
        if let reason = scenario.skipReason(for: features) { return .skipped(reason: reason) }
        let slug = String(scenario.name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
        let nonce = UUID().uuidString.prefix(8).lowercased()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sync-conformance-\(UUID().uuidString)")
        let observer = SyncObserver()
        let outcome: ScenarioOutcome
        do {
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            let context = SyncScenarioContext(
                local: try SyncEndpoint(provider: observer.wrap(local, as: .local), path: "sync-\(nonce)/\(slug)", backend: "local-side"),
                remote: try SyncEndpoint(provider: observer.wrap(remote, as: .remote), path: "sync-\(nonce)/\(slug)", backend: "remote-side"),
                stateURL: scratch.appendingPathComponent("state.sqlite"), observer: observer, runner: runner)
            outcome = await scenario.outcome(in: context)
        } catch {
            outcome = .failed(message: "Setting up the scenario failed: \(error)")
        }
        try? FileManager.default.removeItem(at: scratch)
        for provider in [local, remote] {
            var keys: [ObjectKey] = []
            if let listing = try? await collect(provider.list(ListOptions(prefix: "sync-\(nonce)/"))) { keys = listing }
            try? await provider.deleteFiles(keys)
        }
        return outcome
    }

    private static func collect(_ listing: RemoteListing) async throws -> [ObjectKey] {
        var keys: [ObjectKey] = []
        for try await entry in listing { if let file = entry.file { keys.append(file.path) } }
        return keys
    }
}

extension SyncResult {
    /// Fails unless the run completed having carried one local rename across: an upload and
    /// a remote delete, or one move on the remote.
    func expectOneRename(_ what: String) throws {
        if movedRemote == 1 {
            try expect(uploaded: 0, deletedRemote: 0, what)
        } else {
            try expect(uploaded: 1, deletedRemote: 1, movedRemote: 0, what)
        }
    }

    /// Fails unless the run completed with these counts.
    func expect(
        uploaded: Int? = nil, downloaded: Int? = nil, deletedLocal: Int? = nil, deletedRemote: Int? = nil, conflicts: Int? = nil,
        movedLocal: Int? = nil, movedRemote: Int? = nil, complete: Bool = true, _ what: String
    ) throws {
        var problems: [String] = []
        if complete && !isComplete {
            problems.append("it did not complete (\(failures.map(\.description).joined(separator: "; ")) \(deletesSkipped ?? ""))")
        }
        for (name, expected, actual) in [
            ("uploaded", uploaded, self.uploaded), ("downloaded", downloaded, self.downloaded), ("deleted locally", deletedLocal, self.deletedLocal),
            ("deleted remotely", deletedRemote, self.deletedRemote), ("conflicts", conflicts, self.conflicts),
            ("moved locally", movedLocal, self.movedLocal), ("moved remotely", movedRemote, self.movedRemote),
        ] {
            if let expected, expected != actual { problems.append("\(name) \(actual), expected \(expected)") }
        }
        if !problems.isEmpty {
            throw ConformanceFailure("\(what): \(problems.joined(separator: "; ")). Plan: \(plan.map(\.description).joined(separator: ", ")).")
        }
    }
}
