import BuckiaCore
import Foundation

/// One check that every implementation of a contract must pass.
///
/// A scenario is data: a name, the one-line contract it checks, the capabilities it needs,
/// and a body that throws a ``ConformanceFailure`` describing what went wrong. Backends that
/// lack a required capability skip it; no scenario special-cases a backend.
public struct ConformanceScenario<Context: Sendable>: Sendable, CustomStringConvertible, Hashable {
    /// A short, unique name, used as the test's argument label.
    public let name: String
    /// The contract, one sentence: "Deleting a key that does not exist succeeds."
    public let contract: String
    /// Capabilities the subject must have for the scenario to apply.
    public let requires: Set<Capability>
    /// Capabilities whose presence makes the scenario not apply (for checks of what a
    /// backend does when it lacks a feature).
    public let excludedBy: Set<Capability>
    /// The check itself.
    public let body: @Sendable (Context) async throws -> Void

    /// Declares a scenario.
    public init(
        _ name: String, contract: String, requires: Set<Capability> = [], excludedBy: Set<Capability> = [],
        body: @escaping @Sendable (Context) async throws -> Void
    ) {
        self.name = name
        self.contract = contract
        self.requires = requires
        self.excludedBy = excludedBy
        self.body = body
    }

    /// Why the scenario does not apply to a subject with `capabilities`, or nil if it does.
    public func skipReason(for capabilities: Set<Capability>) -> String? {
        let missing = requires.subtracting(capabilities)
        if !missing.isEmpty { return "needs \(missing.sorted().map(\.rawValue).joined(separator: ", "))" }
        let present = excludedBy.intersection(capabilities)
        if !present.isEmpty { return "applies only without \(present.sorted().map(\.rawValue).joined(separator: ", "))" }
        return nil
    }

    public var description: String { name }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
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
    /// Where in the conformance library the expectation is.
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
