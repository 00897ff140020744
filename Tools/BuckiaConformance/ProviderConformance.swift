import BuckiaCore
import Foundation

/// The provider half of the conformance suite.
///
/// Run every scenario against your provider in your own test target, one test per scenario:
///
/// ```swift
/// import BuckiaConformance
/// import Testing
///
/// @Test(arguments: ProviderConformance.scenarios)
/// func conformance(_ scenario: ProviderScenario) async throws {
///     let outcome = await ProviderConformance.run(scenario, on: try MyProvider(configuration: config))
///     if case .skipped(let reason) = outcome { try Test.cancel(Comment(rawValue: reason)) }
///     #expect(outcome == .passed, "\(outcome)")
/// }
/// ```
public enum ProviderConformance {
    /// Every provider scenario, in a stable order.
    public static var scenarios: [ProviderScenario] {
        roundTripScenarios + listingScenarios + keyScenarios + transferScenarios + accessScenarios + contractScenarios
            + conditionScenarios
    }

    /// Runs one scenario under a fresh prefix and scratch folder, then cleans both up.
    public static func run(_ scenario: ProviderScenario, on provider: any StorageProvider) async -> ScenarioOutcome {
        if let reason = scenario.skipReason(for: provider.capabilities.features) {
            return .skipped(reason: reason)
        }
        let slug = scenario.name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" }
        let nonce = (try? SecureRandom.bytes(count: 4)).map { Hex.encode($0) } ?? UUID().uuidString.prefix(8).lowercased()
        let prefix = "buckia-conformance-\(nonce)/\(String(slug))/"
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-conformance-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        } catch {
            return .failed(message: "Could not create the scratch folder \(scratch.path): \(error)")
        }
        let context = ProviderScenarioContext(provider: provider, prefix: prefix, scratch: scratch)
        let outcome: ScenarioOutcome
        do {
            try await scenario.body(context)
            outcome = .passed
        } catch let failure as ConformanceFailure {
            outcome = .failed(message: failure.description)
        } catch {
            outcome = .failed(message: "Unexpected error: \(error)")
        }
        try? FileManager.default.removeItem(at: scratch)
        if let cleanupError = await removeEverything(under: prefix, from: provider), outcome == .passed {
            return .failed(message: "The scenario passed, but cleaning up its prefix failed: \(cleanupError)")
        }
        return outcome
    }

    /// Runs every scenario in order and reports each.
    public static func runAll(
        on provider: any StorageProvider, scenarios: [ProviderScenario] = scenarios,
        progress: (@Sendable (ProviderScenario, ScenarioOutcome, Duration) -> Void)? = nil
    ) async -> ConformanceReport {
        var rows: [ConformanceReport.Row] = []
        for scenario in scenarios {
            let clock = ContinuousClock()
            let start = clock.now
            let outcome = await run(scenario, on: provider)
            let elapsed = clock.now - start
            progress?(scenario, outcome, elapsed)
            rows.append(ConformanceReport.Row(name: scenario.name, contract: scenario.contract, outcome: outcome, duration: elapsed))
        }
        return ConformanceReport(subject: provider.providerType.rawValue, rows: rows)
    }

    private static func removeEverything(under prefix: String, from provider: any StorageProvider) async -> (any Error)? {
        do {
            var keys: [ObjectKey] = []
            for try await entry in provider.list(ListOptions(prefix: prefix)) {
                if let file = entry.file { keys.append(file.path) }
            }
            try await provider.deleteFiles(keys)
            return nil
        } catch {
            return error
        }
    }
}
