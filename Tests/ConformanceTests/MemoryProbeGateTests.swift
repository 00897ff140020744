import BuckiaConformance
import BuckiaCore
import Foundation
import Testing

/// ``MemoryProbe``'s gate: a measurement of the process's resident memory runs with no
/// conformance scenario beside it (in one full run, scenarios running beside the 192 MiB
/// bounded-memory scenario raised resident memory by 365 MiB and failed it).
@Suite("Memory measurements run alone")
struct MemoryProbeGateTests {
    /// A latch the test opens.
    final class Latch: Sendable {
        private let state = Locked((open: false, waiting: [CheckedContinuation<Void, Never>]()))

        func wait() async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if !state.open { state.waiting.append(continuation) }
                    return state.open
                }
                if now { continuation.resume() }
            }
        }

        func open() {
            for continuation in state.withLock({ state -> [CheckedContinuation<Void, Never>] in
                state.open = true
                defer { state.waiting = [] }
                return state.waiting
            }) { continuation.resume() }
        }
    }

    static func settle() async {
        for _ in 0..<5_000 { await Task.yield() }
    }

    @Test("An exclusive body waits for the sharing ones running, and sharing ones wait for it; one inside a sharing body does not deadlock")
    func exclusion() async throws {
        let events = Locked<[String]>([])
        let scenario = Latch()
        let sharing = Task {
            try await MemoryProbe.sharing {
                events.withLock { $0.append("scenario started") }
                await scenario.wait()
                events.withLock { $0.append("scenario ended") }
            }
        }
        await Self.settle()
        let measurement = Latch()
        let exclusive = Task {
            try await MemoryProbe.exclusively {
                events.withLock { $0.append("measurement started") }
                await measurement.wait()
                events.withLock { $0.append("measurement ended") }
            }
        }
        await Self.settle()
        #expect(events.withLock { $0 } == ["scenario started"], "a measurement started beside a scenario")
        scenario.open()
        try await sharing.value
        await Self.settle()
        let later = Task {
            try await MemoryProbe.sharing { events.withLock { $0.append("later scenario ran") } }
        }
        await Self.settle()
        #expect(!events.withLock { $0 }.contains("later scenario ran"), "a scenario started beside a measurement")
        measurement.open()
        try await exclusive.value
        try await later.value
        #expect(events.withLock { $0 } == ["scenario started", "scenario ended", "measurement started", "measurement ended", "later scenario ran"])

        // A scenario that measures: its share is set aside while the measurement runs.
        let nested = try await MemoryProbe.sharing { try await MemoryProbe.exclusively { 42 } }
        #expect(nested == 42)
    }
}
