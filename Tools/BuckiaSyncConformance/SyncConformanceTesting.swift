import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaSync
import Foundation
import Testing

// Swift Testing glue for the sync scenarios: each scenario a test case of its own, a failure an
// issue carrying the scenario's message, a skip a cancelled (skipped) case with its reason.

extension SyncScenario: CustomTestStringConvertible {
    /// The scenario's name, so a test run lists it.
    public var testDescription: String { name }
}

extension SyncScenario {
    /// Runs this scenario between `local` and `remote` and reports the outcome to the current
    /// test.
    public func check(
        local: any StorageProvider, remote: any StorageProvider, subject: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let outcome = await SyncConformance.run(self, local: local, remote: remote)
        let name = subject ?? "\(local.providerType) ↔ \(remote.providerType)"
        try ConformanceReporting.report(outcome, of: self, subject: name, at: sourceLocation)
    }
}
