import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaCatalog
import Foundation
import Testing

// Swift Testing glue for the catalog scenarios: each scenario a test case of its own, a failure an
// issue carrying the scenario's message, a skip a cancelled (skipped) case with its reason.

extension CatalogScenario: CustomTestStringConvertible {
    /// The scenario's name, so a test run lists it.
    public var testDescription: String { name }
}

extension CatalogScenario {
    /// Runs this scenario against the catalog `open` opens (for a configuration, with its
    /// storage in the folder it is given: the same storage each call) and reports the outcome
    /// to the current test. Scenarios needing a capability not in `capabilities` are skipped.
    public func check(
        _ subject: String, capabilities: Set<CatalogCapability>, sourceLocation: SourceLocation = #_sourceLocation,
        open: @escaping @Sendable (_ configuration: FileCatalogConfiguration, _ folder: URL) async throws -> FileCatalogClient
    ) async throws {
        let outcome = await CatalogConformance.run(self, capabilities: capabilities, open: open)
        try ConformanceReporting.report(outcome, of: self, subject: subject, at: sourceLocation)
    }
}
