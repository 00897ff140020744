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
    public static func peakRise(interval: Duration = .milliseconds(5), _ work: () async throws -> Void) async throws -> Int? {
        guard let baseline = residentBytes() else {
            try await work()
            return nil
        }
        let peak = Locked(baseline)
        let sampler = Task.detached {
            while !Task.isCancelled {
                if let now = residentBytes() { peak.withLock { $0 = max($0, now) } }
                try? await Task.sleep(for: interval)
            }
        }
        defer { sampler.cancel() }
        try await work()
        if let now = residentBytes() { peak.withLock { $0 = max($0, now) } }
        return peak.withLock { $0 } - baseline
    }
}
