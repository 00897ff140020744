import BuckiaCore
import Foundation

/// One check that every implementation of a contract must pass.
///
/// A scenario is data: a name, the one-line contract it checks, the capabilities it needs,
/// and a body that throws a ``ConformanceFailure`` describing what went wrong. Backends that
/// lack a required capability skip it; no scenario special-cases a backend. A body may also
/// throw ``ConformanceSkip`` when what it needs is missing from the run rather than from the
/// backend (a factory that can open a second instance, `/proc` to read memory from).
///
/// ``ProviderScenario``, ``EngineScenario`` and ``ChunkStoreScenario`` are kinds of it here, and
/// the sync, catalog and resource-cache scenario lists (libraries of their own) add theirs; each
/// is its own type, so a test runner names a case by the scenario and a short type name.
public protocol ConformanceScenario: Sendable, Hashable, CustomStringConvertible {
    /// What the scenario's body works with.
    associatedtype Context: Sendable
    /// The capability vocabulary of the subject: ``BuckiaCore/Capability`` for providers,
    /// ``BuckiaCore/EngineCapability`` for engines.
    associatedtype Feature: CapabilityVocabulary

    /// A short, unique name, used as the test case's label.
    var name: String { get }
    /// The contract, one sentence: "Deleting a key that does not exist succeeds."
    var contract: String { get }
    /// Capabilities the subject must have for the scenario to apply.
    var requires: Set<Feature> { get }
    /// Capabilities whose presence makes the scenario not apply (for checks of what a
    /// backend does when it lacks a feature).
    var excludedBy: Set<Feature> { get }
    /// The check itself.
    var body: @Sendable (Context) async throws -> Void { get }

    /// Declares a scenario.
    init(
        _ name: String, contract: String, requires: Set<Feature>, excludedBy: Set<Feature>,
        body: @escaping @Sendable (Context) async throws -> Void)
}

extension ConformanceScenario {
    /// Declares a scenario that applies to every subject.
    public init(_ name: String, contract: String, body: @escaping @Sendable (Context) async throws -> Void) {
        self.init(name, contract: contract, requires: [], excludedBy: [], body: body)
    }

    /// Declares a scenario that needs `requires`.
    public init(_ name: String, contract: String, requires: Set<Feature>, body: @escaping @Sendable (Context) async throws -> Void) {
        self.init(name, contract: contract, requires: requires, excludedBy: [], body: body)
    }

    /// Declares a scenario that applies only without `excludedBy`.
    public init(_ name: String, contract: String, excludedBy: Set<Feature>, body: @escaping @Sendable (Context) async throws -> Void) {
        self.init(name, contract: contract, requires: [], excludedBy: excludedBy, body: body)
    }

    /// Why the scenario does not apply to a subject with `capabilities`, or nil if it does.
    public func skipReason(for capabilities: Set<Feature>) -> String? {
        let missing = requires.subtracting(capabilities)
        if !missing.isEmpty { return "needs \(missing.sorted().map(\.rawValue).joined(separator: ", "))" }
        let present = excludedBy.intersection(capabilities)
        if !present.isEmpty { return "applies only without \(present.sorted().map(\.rawValue).joined(separator: ", "))" }
        return nil
    }

    /// Runs the body, turning what it throws into an outcome.
    package func outcome(in context: Context) async -> ScenarioOutcome {
        do {
            try await body(context)
            return .passed
        } catch let failure as ConformanceFailure {
            return .failed(message: failure.description)
        } catch let skip as ConformanceSkip {
            return .skipped(reason: skip.reason)
        } catch {
            return .failed(message: "Unexpected error: \(error)")
        }
    }

    public var description: String { name }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// A scenario for a ``StorageProvider``: see ``ProviderConformance``.
public struct ProviderScenario: ConformanceScenario {
    public typealias Feature = Capability
    public let name: String
    public let contract: String
    public let requires: Set<Feature>
    public let excludedBy: Set<Feature>
    public let body: @Sendable (ProviderScenarioContext) async throws -> Void

    public init(
        _ name: String, contract: String, requires: Set<Feature>, excludedBy: Set<Feature>,
        body: @escaping @Sendable (ProviderScenarioContext) async throws -> Void
    ) {
        (self.name, self.contract, self.requires, self.excludedBy, self.body) = (name, contract, requires, excludedBy, body)
    }
}

/// A scenario for a ``StorageEngine``: see ``EngineConformance``.
public struct EngineScenario: ConformanceScenario {
    public typealias Feature = EngineCapability
    public let name: String
    public let contract: String
    public let requires: Set<Feature>
    public let excludedBy: Set<Feature>
    public let body: @Sendable (EngineScenarioContext) async throws -> Void

    public init(
        _ name: String, contract: String, requires: Set<Feature>, excludedBy: Set<Feature>,
        body: @escaping @Sendable (EngineScenarioContext) async throws -> Void
    ) {
        (self.name, self.contract, self.requires, self.excludedBy, self.body) = (name, contract, requires, excludedBy, body)
    }
}

/// Thrown by a scenario body when the run lacks what the scenario needs: the scenario is
/// reported as skipped, with this reason, never as passed.
public struct ConformanceSkip: Error, Sendable, CustomStringConvertible {
    /// What is missing, and how to provide it.
    public let reason: String

    /// Creates a skip.
    public init(_ reason: String) { self.reason = reason }

    public var description: String { "skipped: \(reason)" }
}

/// How one scenario went.
public enum ScenarioOutcome: Sendable, Hashable {
    case passed
    /// The subject lacks what the scenario needs.
    case skipped(reason: String)
    /// The contract was broken, or the scenario hit an unexpected error.
    case failed(message: String)

    /// A one-word label for tables.
    public var label: String {
        switch self {
        case .passed: "pass"
        case .skipped: "skip"
        case .failed: "FAIL"
        }
    }
}

/// A broken contract, with the scenario and what was observed.
public struct ConformanceFailure: Error, Sendable, CustomStringConvertible {
    /// What was expected and what happened instead.
    public let message: String
    /// Where in the conformance library the expectation is (`Module/File.swift:line`).
    public let location: String

    /// Creates a failure.
    public init(_ message: String, file: StaticString = #fileID, line: UInt = #line) {
        self.message = message
        self.location = "\(file):\(line)"
    }

    public var description: String { "\(message) (\(location))" }
}

/// Expectation helpers for scenario bodies; each throws a ``ConformanceFailure``.
public enum Expect {
    /// Fails unless `condition` holds.
    public static func that(
        _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
    ) throws {
        if !condition { throw ConformanceFailure(message(), file: file, line: line) }
    }

    /// Fails unless the values are equal, showing both.
    public static func equal<T: Equatable>(
        _ actual: T, _ expected: T, _ what: String, file: StaticString = #fileID, line: UInt = #line
    ) throws {
        if actual != expected {
            throw ConformanceFailure("\(what): expected \(expected), got \(actual)", file: file, line: line)
        }
    }

    /// Fails unless the byte strings are equal; large data is summarised by size and hash.
    public static func sameBytes(
        _ actual: Data, _ expected: Data, _ what: String, file: StaticString = #fileID, line: UInt = #line
    ) throws {
        guard actual != expected else { return }
        func summary(_ data: Data) -> String { "\(data.count) bytes, sha256 \(Hashing.sha256Hex(data).prefix(16))…" }
        throw ConformanceFailure("\(what): expected \(summary(expected)), got \(summary(actual))", file: file, line: line)
    }

    /// Fails unless `body` throws a ``BuckiaError`` with `code`.
    public static func error<T>(
        _ code: BuckiaError.Code, _ what: String, file: StaticString = #fileID, line: UInt = #line,
        _ body: () async throws -> T
    ) async throws {
        do {
            let value = try await body()
            throw ConformanceFailure("\(what): expected a \(code) error, but it succeeded with \(value)", file: file, line: line)
        } catch let error as BuckiaError {
            if error.code != code {
                throw ConformanceFailure("\(what): expected a \(code) error, got \(error)", file: file, line: line)
            }
        } catch let failure as ConformanceFailure {
            throw failure
        } catch {
            throw ConformanceFailure("\(what): expected a BuckiaError \(code), got \(type(of: error)): \(error)", file: file, line: line)
        }
    }
}
