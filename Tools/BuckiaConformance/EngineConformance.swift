import BuckiaCore
import Foundation

/// An engine scenario.
public typealias EngineScenario = ConformanceScenario<EngineScenarioContext>

/// What an engine scenario works with: a way to open the engine under test, fresh and empty.
public struct EngineScenarioContext: Sendable {
    /// Opens the engine on the scenario's storage. Calling it again opens the same storage
    /// again, which is how persistence is checked.
    public let open: @Sendable () async throws -> any StorageEngine
}

/// The engine half of the conformance suite; the same mechanism as ``ProviderConformance``.
///
/// ```swift
/// @Test(arguments: EngineConformance.scenarios)
/// func conformance(_ scenario: EngineScenario) async throws {
///     let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
///     let outcome = await EngineConformance.run(scenario) { try await MyEngine(directory: directory) }
///     if case .skipped(let reason) = outcome { try Test.cancel(Comment(rawValue: reason)) }
///     #expect(outcome == .passed, "\(outcome)")
/// }
/// ```
public enum EngineConformance {
    /// Every engine scenario, in a stable order.
    public static var scenarios: [EngineScenario] { basicScenarios + dataScenarios }

    /// Runs one scenario; `open` must return an engine over empty storage the first time.
    public static func run(_ scenario: EngineScenario, open: @escaping @Sendable () async throws -> any StorageEngine) async -> ScenarioOutcome {
        let capabilities: Set<Capability>
        do {
            capabilities = try await open().capabilities
        } catch {
            return .failed(message: "Opening the engine failed: \(error)")
        }
        if let reason = scenario.skipReason(for: capabilities) { return .skipped(reason: reason) }
        do {
            try await scenario.body(EngineScenarioContext(open: open))
            return .passed
        } catch let failure as ConformanceFailure {
            return .failed(message: failure.description)
        } catch {
            return .failed(message: "Unexpected error: \(error)")
        }
    }

    static var basicScenarios: [EngineScenario] {
        [
            EngineScenario("engine: round trip", contract: "A written value reads back identical, and its key exists.") { context in
                let engine = try await context.open()
                let key = CacheKey(verbatim: "greeting")
                try await engine.write(Data("hello".utf8), key: key)
                try Expect.sameBytes(try await engine.read(key: key) ?? Data(), Data("hello".utf8), "value read back")
                try Expect.that(try await engine.keyExists(key), "keyExists is false for a written key")
                try Expect.equal(try await engine.keyCount(), 1, "keyCount")
            },
            EngineScenario("engine: missing key", contract: "Reading a key that was never written returns nil.") { context in
                let engine = try await context.open()
                try Expect.that(try await engine.read(key: CacheKey("never")) == nil, "read of a missing key was not nil")
                try Expect.that(try await engine.createdAt(key: CacheKey("never")) == nil, "createdAt of a missing key was not nil")
            },
            EngineScenario("engine: overwrite keeps createdAt", contract: "Overwriting a key replaces its value, keeps createdAt and moves updatedAt.") { context in
                let engine = try await context.open()
                let key = CacheKey(verbatim: "k")
                try await engine.write(Data("1".utf8), key: key)
                let created = try await engine.createdAt(key: key)
                // Over a second, so engines that keep whole-second timestamps are judged fairly.
                try await Task.sleep(for: .milliseconds(1_100))
                try await engine.write(Data("2".utf8), key: key)
                try Expect.sameBytes(try await engine.read(key: key) ?? Data(), Data("2".utf8), "value after overwrite")
                try Expect.equal(try await engine.createdAt(key: key), created, "createdAt after overwrite")
                let updated = try await engine.updatedAt(key: key)
                try Expect.that((updated ?? .distantPast) > (created ?? .distantFuture), "updatedAt \(String(describing: updated)) did not move past createdAt \(String(describing: created))")
            },
            EngineScenario("engine: remove and removeAll", contract: "Removed keys read as nil; removing a missing key succeeds; removeAll empties the engine.") { context in
                let engine = try await context.open()
                try await engine.write([(CacheKey(verbatim: "a"), Data("a".utf8)), (CacheKey(verbatim: "b"), Data("b".utf8))])
                try await engine.remove(key: CacheKey(verbatim: "a"))
                try await engine.remove(key: CacheKey(verbatim: "never"))
                try Expect.equal(try await engine.allKeys(), [CacheKey(verbatim: "b")], "keys after remove")
                try await engine.removeAllData()
                try Expect.equal(try await engine.keyCount(), 0, "keyCount after removeAll")
            },
            EngineScenario("engine: data survives reopening", contract: "Values written before closing are there after opening again.", requires: [.persistent]) { context in
                do {
                    let engine = try await context.open()
                    try await engine.write(Data("kept".utf8), key: CacheKey(verbatim: "durable"))
                }
                let reopened = try await context.open()
                try Expect.sameBytes(try await reopened.read(key: CacheKey(verbatim: "durable")) ?? Data(), Data("kept".utf8), "value after reopening")
            },
        ]
    }
}
