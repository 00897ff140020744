import BuckiaCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process whose peak resident memory is the kernel's own figure (`ru_maxrss` from
/// `wait4`), not a sample that can miss the peak.
///
/// The child is started by a small Python wrapper that forks, execs it and reaps it. A
/// process's `ru_maxrss` includes the memory image it had before `exec`: spawned straight from
/// the test runner it would report the runner's size, so the wrapper (about 10 MiB) is the
/// image that is replaced. The figure is therefore the larger of the child's peak and the
/// wrapper's size — an overestimate when the child is tiny, never an underestimate.
public final class MeasuredProcess: Sendable {
    /// How a measured child ended.
    public struct Ending: Sendable, Decodable {
        /// The exit status, or nil when a signal ended it.
        public let status: Int32?
        /// The signal that ended it, if one did.
        public let signal: Int32?
        /// The peak resident set size, in KiB.
        let maxrss_kib: Int64

        /// The peak resident set size, in bytes.
        public var peakResidentBytes: Int64 { maxrss_kib * 1024 }
    }

    static let wrapper = """
        import json, os, signal, sys
        result, argv = sys.argv[1], sys.argv[2:]
        pid = os.fork()
        if pid == 0:
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            os.execv(argv[0], argv)
        def forward(signum, frame):
            os.kill(pid, signal.SIGKILL)
        signal.signal(signal.SIGTERM, forward)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        while True:
            try:
                _, status, usage = os.wait4(pid, 0)
                break
            except InterruptedError:
                continue
        ending = {"status": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                  "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None, "maxrss_kib": usage.ru_maxrss}
        with open(result, "w") as out:
            json.dump(ending, out)
        """

    private let process: Spawned
    private let result: URL

    /// Starts `executable` with `arguments` and exactly `environment`; its output and errors
    /// go to `output`, standard input is /dev/null.
    public init(_ executable: URL, _ arguments: [String], environment: [String: String], output: URL) throws {
        result = output.deletingLastPathComponent().appendingPathComponent(".measured-\(UUID().uuidString).json")
        process = try Spawned(
            try PythonProcess.executable(), ["-c", Self.wrapper, result.path, executable.path] + arguments, environment: environment,
            output: .file(output), errors: .file(output))
    }

    /// Kills the measured child with SIGKILL (through the wrapper, which then reports it).
    public func kill() {
        process.signal(SIGTERM)
    }

    /// ``wait(upTo:)`` on a thread of its own, so a long child does not hold one of the
    /// cooperative pool's threads (two on a 2-core machine).
    public func ending(upTo limit: Duration) async throws -> Ending {
        try await withCheckedThrowingContinuation { continuation in
            let waiter = Thread { continuation.resume(with: Result { try self.wait(upTo: limit) }) }
            waiter.start()
        }
    }

    /// Waits for the child to end; one still running after `limit` is killed and reported.
    public func wait(upTo limit: Duration) throws -> Ending {
        guard process.wait(limit) else {
            kill()
            if !process.wait(.seconds(10)) { process.stop() }
            throw BuckiaError(.io, "The measured child ran past \(limit) and was killed.")
        }
        defer { try? FileManager.default.removeItem(at: result) }
        guard let data = try? Data(contentsOf: result) else {
            throw BuckiaError(.io, "The measuring wrapper ended (status \(process.status)) without reporting on its child.")
        }
        return try JSONDecoder().decode(Ending.self, from: data)
    }
}
