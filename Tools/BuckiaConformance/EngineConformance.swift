import BuckiaCore
import Foundation

/// The time an engine under test keeps: a manual clock the scenarios set and move, so a
/// check of `createdAt` and `updatedAt` needs no sleep and no window around the wall clock.
public final class ConformanceClock: Sendable {
    private let current: Locked<Date>

    /// A clock stopped at `start` (a whole second, so engines that keep whole seconds compare
    /// exactly).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_000_000_000)) {
        current = Locked(start)
    }

    /// The time the engine is told it is.
    public var now: Date { current.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// The clock as an engine's `now:` parameter takes it.
    public var function: @Sendable () -> Date { { [current] in current.withLock { $0 } } }
}

/// What an engine scenario works with: a way to open the engine under test, and the clock it
/// runs on.
public struct EngineScenarioContext: Sendable {
    /// The time the engine keeps; scenarios move it instead of waiting.
    public let clock: ConformanceClock
    let opener: @Sendable (@escaping @Sendable () -> Date) async throws -> any StorageEngine

    /// Opens the engine on the scenario's storage, on ``clock``. Calling it again opens the
    /// same storage again, which is how persistence is checked.
    public func open() async throws -> any StorageEngine { try await opener(clock.function) }
}

/// The engine half of the conformance suite; the same mechanism as ``ProviderConformance``.
///
/// The factory receives the clock the engine must take its time from (the built-in engines'
/// `now:` parameter), and opens the same storage each time it is called. With
/// BuckiaConformanceTesting, one parameterised test runs every scenario as its own case:
///
/// ```swift
/// @Test(arguments: EngineConformance.scenarios)
/// func conformance(_ scenario: EngineScenario) async throws {
///     let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
///     defer { try? FileManager.default.removeItem(at: directory) }
///     try await scenario.check("my engine") { now in try MyEngine(directory: directory, now: now) }
/// }
/// ```
public enum EngineConformance {
    /// Every engine scenario, in a stable order.
    public static var scenarios: [EngineScenario] { basicScenarios + dataScenarios }

    /// Runs one scenario; `open` must return an engine over empty storage the first time, and
    /// the same storage after that, keeping time by the clock it is given.
    public static func run(
        _ scenario: EngineScenario, open: @escaping @Sendable (_ now: @escaping @Sendable () -> Date) async throws -> any StorageEngine
    ) async -> ScenarioOutcome {
        let context = EngineScenarioContext(clock: ConformanceClock(), opener: open)
        let capabilities: Set<EngineCapability>
        do {
            capabilities = try await context.open().capabilities
        } catch {
            return .failed(message: "Opening the engine failed: \(error)")
        }
        if let reason = scenario.skipReason(for: capabilities) { return .skipped(reason: reason) }
        return await scenario.outcome(in: context)
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
            EngineScenario("engine: overwrite keeps createdAt", contract: "Overwriting a key replaces its value, keeps createdAt and moves updatedAt to the time of the overwrite.") { context in
                let engine = try await context.open()
                let key = CacheKey(verbatim: "k")
                let created = context.clock.now
                try await engine.write(Data("1".utf8), key: key)
                context.clock.advance(by: 10)
                try await engine.write(Data("2".utf8), key: key)
                try Expect.sameBytes(try await engine.read(key: key) ?? Data(), Data("2".utf8), "value after overwrite")
                try expectTime(try await engine.createdAt(key: key), created, "createdAt after overwrite")
                try expectTime(try await engine.updatedAt(key: key), context.clock.now, "updatedAt after overwrite")
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

    /// Fails unless `actual` is `expected` to the millisecond (the clock stands on whole
    /// seconds, so engines that keep whole seconds compare exactly).
    static func expectTime(_ actual: Date?, _ expected: Date, _ what: String, file: StaticString = #fileID, line: UInt = #line) throws {
        guard let actual else { throw ConformanceFailure("\(what) is nil for a written key", file: file, line: line) }
        if abs(actual.timeIntervalSince(expected)) > 0.001 {
            throw ConformanceFailure(
                "\(what): \(actual.timeIntervalSince1970), expected the engine's clock, \(expected.timeIntervalSince1970) (is the engine opened with the clock it is given?)",
                file: file, line: line)
        }
    }
}
