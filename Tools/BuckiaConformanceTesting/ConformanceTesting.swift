import BuckiaChunks
import BuckiaConformance
import BuckiaCore
import Foundation
import Testing

// Swift Testing glue for the conformance suite: one parameterised test runs every scenario as
// its own test case, a broken contract is an issue carrying the scenario's message, and a
// skipped scenario is a cancelled (skipped) case with its reason, never a pass.
//
// It is a module of its own so that code that runs scenarios outside a test (the command
// line's `conformance`) never links Swift Testing.

extension ProviderScenario: CustomTestStringConvertible {
    /// The scenario's name, so a test run lists "keys: case is significant", not a value dump.
    public var testDescription: String { name }
}

extension EngineScenario: CustomTestStringConvertible {
    /// The scenario's name, so a test run lists it.
    public var testDescription: String { name }
}

extension ProviderScenario {
    /// Runs this scenario against the provider `factory` opens and reports the outcome to
    /// the current test.
    ///
    /// ```swift
    /// @Test(arguments: ProviderConformance.scenarios)
    /// func conformance(_ scenario: ProviderScenario) async throws {
    ///     try await scenario.check(.plugin(MyProvider.self, configuration: configuration))
    /// }
    /// ```
    ///
    /// A failure is recorded as an issue at the caller, with the contract and what was seen.
    /// A scenario that does not apply (a capability the provider does not declare, a factory
    /// that cannot open a second instance) cancels the test case with the reason, which Swift
    /// Testing records as skipped; the line `⊘ skipped SUBJECT × SCENARIO: REASON` also goes to
    /// standard error, because Swift 6.3's console prints a cancelled case like a passed one.
    public func check(_ factory: ProviderFactory, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let outcome = await ProviderConformance.run(self, factory: factory)
        try ConformanceReporting.report(outcome, of: self, subject: factory.name, at: sourceLocation)
    }

    /// Runs this scenario against one provider instance (scenarios that need a second
    /// instance or the configuration are skipped) and reports the outcome to the current test.
    public func check(_ provider: any StorageProvider, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await check(.instance(provider), sourceLocation: sourceLocation)
    }
}

extension EngineScenario {
    /// Runs this scenario against the engine `open` opens and reports the outcome to the
    /// current test.
    ///
    /// `open` must open the same storage each time it is called (empty the first time), with
    /// the clock it is given as the engine's time.
    public func check(
        _ subject: String, sourceLocation: SourceLocation = #_sourceLocation,
        open: @escaping @Sendable (_ now: @escaping @Sendable () -> Date) async throws -> any StorageEngine
    ) async throws {
        let outcome = await EngineConformance.run(self, open: open)
        try ConformanceReporting.report(outcome, of: self, subject: subject, at: sourceLocation)
    }
}

/// Turns a scenario's outcome into what Swift Testing records; the other scenario lists'
/// libraries (sync, catalog, resource cache) report through it too.
package enum ConformanceReporting {
    package static func report(
        _ outcome: ScenarioOutcome, of scenario: some ConformanceScenario, subject: String, at sourceLocation: SourceLocation
    ) throws {
        switch outcome {
        case .passed:
            return
        case .failed(let message):
            Issue.record(Comment(rawValue: "\(subject) × \(scenario.name): \(scenario.contract)\n\(message)"), sourceLocation: sourceLocation)
        case .skipped(let reason):
            FileHandle.standardError.write(Data("⊘ skipped \(subject) × \(scenario.name): \(reason)\n".utf8))
            try Test.cancel(Comment(rawValue: "skipped: \(reason)"), sourceLocation: sourceLocation)
        }
    }
}

extension ChunkStoreScenario: CustomTestStringConvertible {
    /// The scenario's name, so a test run lists it.
    public var testDescription: String { name }
}

extension ChunkStoreScenario {
    /// Runs this scenario against the chunk store `open` opens (undecorated; the same storage
    /// each call) and reports the outcome to the current test.
    public func check(
        _ subject: String, sourceLocation: SourceLocation = #_sourceLocation, open: @escaping @Sendable () async throws -> any ChunkStorageComposable
    ) async throws {
        let outcome = await ChunkStoreConformance.run(self, open: open)
        try ConformanceReporting.report(outcome, of: self, subject: subject, at: sourceLocation)
    }
}
