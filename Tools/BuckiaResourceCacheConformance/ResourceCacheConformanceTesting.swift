import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaResourceCache
import Foundation
import Testing

// Swift Testing glue for the resource cache scenarios: each scenario a test case of its own, a failure an
// issue carrying the scenario's message, a skip a cancelled (skipped) case with its reason.

extension ResourceCacheScenario: CustomTestStringConvertible {
    /// The scenario's name, so a test run lists it.
    public var testDescription: String { name }
}

extension ResourceCacheScenario {
    /// Runs this scenario with the cache configuration `configure` makes (given a folder of
    /// the scenario's own for what its plugins keep beside the cache) and reports the outcome
    /// to the current test. `capabilities` defaults to what the configuration can be seen to
    /// do (``ResourceCacheConfiguration/capabilities``).
    public func check(
        _ subject: String, capabilities: Set<ResourceCacheCapability>? = nil, sourceLocation: SourceLocation = #_sourceLocation,
        configure: @escaping @Sendable (_ scratch: URL) throws -> ResourceCacheConfiguration
    ) async throws {
        let outcome = await ResourceCacheConformance.run(self, capabilities: capabilities, configure: configure)
        try ConformanceReporting.report(outcome, of: self, subject: subject, at: sourceLocation)
    }
}
