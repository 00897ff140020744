import BuckiaCore
import Foundation

/// Measures how far resident memory rises while work runs, by sampling `/proc/self/statm`.
///
/// Sampling catches the plateau of a streaming transfer; it may miss a spike shorter than
/// the interval, which a buffer that grows with file size never is.
public enum MemoryProbe {
    /// The resident set size now, in bytes, or nil where `/proc` is not available.
    public static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Runs `work` and returns the highest resident size seen minus the size before, or nil
    /// where memory cannot be read.
    ///
    /// Samples come from a dedicated thread, not from the shared task pool: transfers do
    /// blocking I/O, and a sampler task could be starved exactly while memory peaks. It runs
    /// ``exclusively(_:)``: resident memory is the whole process's, so nothing else that the
    /// gate knows of runs beside it.
    public static func peakRise(interval: Duration = .milliseconds(2), _ work: () async throws -> Void) async throws -> Int? {
        try await exclusively {
            guard let baseline = residentBytes() else {
                try await work()
                return nil
            }
            let peak = Locked((highest: baseline, done: false))
            let microseconds = UInt32(clamping: interval.components.attoseconds / 1_000_000_000_000 + interval.components.seconds * 1_000_000)
            let sampler = Thread {
                while !peak.withLock({ $0.done }) {
                    if let now = residentBytes() { peak.withLock { $0.highest = max($0.highest, now) } }
                    usleep(microseconds)
                }
            }
            sampler.start()
            defer { peak.withLock { $0.done = true } }
            try await work()
            if let now = residentBytes() { peak.withLock { $0.highest = max($0.highest, now) } }
            return peak.withLock { $0.highest } - baseline
        }
    }

    /// Runs `body` while nothing else the gate knows of runs: no memory measurement, no other
    /// `exclusively` body, and no conformance scenario (each runs ``sharing(_:)``).
    ///
    /// Resident memory is per process: a test that allocates tens of MiB while a measurement
    /// runs beside it would be blamed on the transfer being measured, and so would the
    /// scenarios of every other backend the test runner runs at once (in one full run, a
    /// 192 MiB copy was seen to raise it by 365 MiB). Wrap such tests in this. Called from a
    /// scenario (which holds the gate shared), it lets go of the scenario's share while it
    /// runs and takes it back after.
    public static func exclusively<T>(_ body: () async throws -> T) async throws -> T {
        if holdsExclusive { return try await body() }
        let hold = sharedHold
        if let hold, hold.suspend() { gate.releaseShared() }
        await gate.acquireExclusive()
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await $holdsExclusive.withValue(true) { try await body() })
        } catch {
            outcome = .failure(error)
        }
        gate.releaseExclusive()
        if let hold, hold.resume() { await gate.acquireShared() }
        return try outcome.get()
    }

    /// Runs `body` beside any number of other `sharing` bodies, but never beside an
    /// ``exclusively(_:)`` one. The conformance runner runs every scenario this way.
    public static func sharing<T>(_ body: () async throws -> T) async throws -> T {
        if holdsExclusive || sharedHold != nil { return try await body() }
        await gate.acquireShared()
        let hold = SharedHold()
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await $sharedHold.withValue(hold) { try await body() })
        } catch {
            outcome = .failure(error)
        }
        // Every `exclusively` inside took the share back before it returned.
        gate.releaseShared()
        return try outcome.get()
    }

    @TaskLocal private static var holdsExclusive = false
    @TaskLocal private static var sharedHold: SharedHold?

    /// A scenario's share of the gate, which `exclusively` calls in its tasks set aside while
    /// they run: the first to start lets it go, the last to end takes it back.
    private final class SharedHold: Sendable {
        private let suspended = Locked(0)

        /// Whether this is the first suspension (so the share is to be let go).
        func suspend() -> Bool { suspended.withLock { $0 += 1; return $0 == 1 } }

        /// Whether this was the last suspension (so the share is to be taken back).
        func resume() -> Bool { suspended.withLock { $0 -= 1; return $0 == 0 } }
    }

    private static let gate = Gate()

    /// Readers and writers: any number share it, one holds it alone; a writer waiting keeps
    /// new readers out (measurements are few and short, scenarios many).
    private final class Gate: Sendable {
        private struct State {
            var readers = 0
            var writer = false
            var waitingWriters: [CheckedContinuation<Void, Never>] = []
            var waitingReaders: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Locked(State())

        func acquireShared() async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    guard !state.writer, state.waitingWriters.isEmpty else {
                        state.waitingReaders.append(continuation)
                        return false
                    }
                    state.readers += 1
                    return true
                }
                if now { continuation.resume() }
            }
        }

        func releaseShared() {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.readers -= 1
                guard state.readers == 0, !state.waitingWriters.isEmpty else { return nil }
                state.writer = true
                return state.waitingWriters.removeFirst()
            }
            next?.resume()
        }

        func acquireExclusive() async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    guard !state.writer, state.readers == 0 else {
                        state.waitingWriters.append(continuation)
                        return false
                    }
                    state.writer = true
                    return true
                }
                if now { continuation.resume() }
            }
        }

        func releaseExclusive() {
            let next = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                if !state.waitingWriters.isEmpty { return [state.waitingWriters.removeFirst()] }
                state.writer = false
                state.readers += state.waitingReaders.count
                defer { state.waitingReaders = [] }
                return state.waitingReaders
            }
            for continuation in next { continuation.resume() }
        }
    }
}
