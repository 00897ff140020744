import BuckiaCore
import Foundation

/// The provider half of the conformance suite.
///
/// Give it a ``ProviderFactory``: a plugin and a configuration runs every scenario; one
/// instance runs all but those that need a second instance or the configuration. With
/// BuckiaConformanceTesting, one parameterised test reports each scenario as its own case:
///
/// ```swift
/// import BuckiaConformance
/// import BuckiaConformanceTesting
/// import Testing
///
/// @Test(arguments: ProviderConformance.scenarios)
/// func conformance(_ scenario: ProviderScenario) async throws {
///     try await scenario.check(.plugin(MyProvider.self, configuration: configuration))
/// }
/// ```
public enum ProviderConformance {
    /// Every provider scenario, in a stable order.
    public static var scenarios: [ProviderScenario] {
        roundTripScenarios + listingScenarios + keyScenarios + transferScenarios + streamScenarios + accessScenarios + contractScenarios
            + conditionScenarios + instanceScenarios + folderScenarios + partUploadScenarios
    }

    /// Runs one scenario against `provider`.
    public static func run(_ scenario: ProviderScenario, on provider: any StorageProvider) async -> ScenarioOutcome {
        await run(scenario, factory: .instance(provider))
    }

    /// Runs one scenario against a provider the factory opens, under a fresh prefix and
    /// scratch folder, then cleans both up.
    public static func run(_ scenario: ProviderScenario, factory: ProviderFactory) async -> ScenarioOutcome {
        let provider: any StorageProvider
        do {
            provider = try await factory.open()
        } catch {
            return .failed(message: "Opening the provider failed: \(error)")
        }
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
        let context = ProviderScenarioContext(provider: provider, factory: factory, prefix: prefix, scratch: scratch)
        let outcome = await scenario.outcome(in: context)
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
        await runAll(factory: .instance(provider), scenarios: scenarios, progress: progress)
    }

    /// Runs every scenario in order against providers the factory opens, and reports each.
    public static func runAll(
        factory: ProviderFactory, scenarios: [ProviderScenario] = scenarios,
        progress: (@Sendable (ProviderScenario, ScenarioOutcome, Duration) -> Void)? = nil
    ) async -> ConformanceReport {
        await ConformanceReport.collect(subject: factory.name, scenarios: scenarios, progress: progress) { await run($0, factory: factory) }
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
