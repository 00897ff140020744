import BuckiaCatalog
import BuckiaChunks
import BuckiaConformance
import BuckiaCore
import BuckiaResourceCache
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

extension SyncScenario: CustomTestStringConvertible {
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

/// Turns a scenario's outcome into what Swift Testing records.
enum ConformanceReporting {
    static func report(
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
