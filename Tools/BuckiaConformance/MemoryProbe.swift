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
    /// blocking I/O, and a sampler task could be starved exactly while memory peaks. Only one
    /// measurement runs at a time per process, so two large transfers never add up.
    public static func peakRise(interval: Duration = .milliseconds(2), _ work: () async throws -> Void) async throws -> Int? {
        await gate.acquire()
        defer { gate.release() }
        do {
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

    /// Runs `body` while no memory measurement is running, and keeps measurements waiting
    /// until it is done.
    ///
    /// Resident memory is per process: a test that allocates tens of MiB while a measurement
    /// runs beside it would be blamed on the transfer being measured. Wrap such tests in this.
    public static func exclusively<T>(_ body: () async throws -> T) async rethrows -> T {
        await gate.acquire()
        defer { gate.release() }
        return try await body()
    }

    private static let gate = Gate()

    /// Lets one measurement run at a time; waiters resume in arrival order.
    private final class Gate: Sendable {
        private let state = Locked((busy: false, waiting: [CheckedContinuation<Void, Never>]()))

        func acquire() async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if !state.busy {
                        state.busy = true
                        return true
                    }
                    state.waiting.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func release() {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard !state.waiting.isEmpty else {
                    state.busy = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
    }
}
