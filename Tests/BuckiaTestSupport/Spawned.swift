import BuckiaCore
import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A program a test starts in the background (a test server, a `buckia` it signals): started
/// and reaped as ``ToolRun`` does, never through Foundation's `Process`.
///
/// On Linux `Process` learns that a child ended only when a socket the child holds reaches end
/// of file, and a child another thread spawns at that moment can inherit that socket. A test
/// server started beside a short `buckia` then kept the `buckia`'s end from ever being seen:
/// `waitUntilExit()` waited for ever on a cooperative thread, and with every such thread
/// waiting no test could go on (a CI run sat silent for 80 minutes). Here the child gets no
/// descriptor but its three, its end is `waitpid`'s word, and every wait has a bound.
public final class Spawned: Sendable {
    /// Where standard input comes from.
    public enum Input: Sendable {
        case null
        /// A pipe whose write end this object keeps (``closeInput()``): a server that watches
        /// its standard input ends when the test process does.
        case pipe
    }

    /// Where standard output or standard error goes.
    public enum Output: Sendable {
        case null
        /// A file, created or truncated.
        case file(URL)
        /// A pipe whose read end is ``output`` (or ``errorOutput``).
        case pipe
        /// A descriptor the caller keeps open.
        case descriptor(Int32)
    }

    public let pid: pid_t
    /// What started it, for messages.
    public let command: String
    private let child: ToolRun.Child
    private let inputEnd: Locked<Int32>
    /// The read end of standard output when it is a pipe, else -1.
    public let output: Int32
    /// The read end of standard error when it is a pipe, else -1.
    public let errorOutput: Int32

    /// Starts `executable` (a path) with `arguments` and exactly `environment`; `inherited`
    /// descriptors (a listening socket) become the child's 3, 4 and on.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/io`` when it cannot start.
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        directory: URL? = nil, input: Input = .null, output: Output = .null, errors: Output = .null, inherited: [Int32] = []
    ) throws {
        var pipes: [Int32] = []  // this process's ends
        var childEnds: [Int32] = []
        defer { childEnds.forEach { _ = close($0) } }
        func pipe() throws -> (read: Int32, write: Int32) {
            var ends: [Int32] = [-1, -1]
            guard buckia_pipe_cloexec(&ends) == 0 else {
                pipes.forEach { _ = close($0) }
                throw BuckiaError.posix(errno, operation: "pipe", path: executable.path)
            }
            return (ends[0], ends[1])
        }
        func stream(_ output: Output) throws -> (ToolRun.Stream, Int32) {
            switch output {
            case .null: return (.null, -1)
            case .file(let url): return (.file(url.path), -1)
            case .descriptor(let descriptor): return (.descriptor(descriptor), -1)
            case .pipe:
                let ends = try pipe()
                pipes.append(ends.read)
                childEnds.append(ends.write)
                return (.descriptor(ends.write), ends.read)
            }
        }
        var standardInput = ToolRun.Stream.null
        var inputEnd: Int32 = -1
        if case .pipe = input {
            let ends = try pipe()
            pipes.append(ends.write)
            childEnds.append(ends.read)
            (standardInput, inputEnd) = (.descriptor(ends.read), ends.write)
        }
        let (standardOutput, outputEnd) = try stream(output)
        let (standardError, errorsEnd) = try stream(errors)
        command = ([executable.lastPathComponent] + arguments).joined(separator: " ")
        do {
            pid = try ToolRun.spawn(
                executable.path, arguments, environment: environment, directory: directory?.path,
                streams: [standardInput, standardOutput, standardError] + inherited.map { .descriptor($0) })
        } catch {
            pipes.forEach { _ = close($0) }
            throw error
        }
        child = ToolRun.Child(pid)
        self.inputEnd = Locked(inputEnd)
        self.output = outputEnd
        self.errorOutput = errorsEnd
    }

    deinit {
        stop()
        closeInput()
        if output >= 0 { close(output) }
        if errorOutput >= 0 { close(errorOutput) }
    }

    /// Whether it still runs (not yet reaped).
    public var isRunning: Bool { child.ending == nil }

    /// How it ended; nil while it runs.
    public var termination: ToolRun.Termination? { child.ending }

    /// Its exit status once ended (128 plus the signal when a signal ended it).
    public var status: Int32 { child.status }

    /// Waits at most `limit` for it to end; whether it did.
    public func wait(_ limit: Duration) -> Bool { child.wait(limit) }

    /// Looks at `observed` (what the process has done: bytes read, files written, requests
    /// a server saw) until it holds or the process ends, waiting on the process's end for a
    /// millisecond between looks; `limit` only guards against a hang. What a kill harness does
    /// before it kills.
    public func watch(until observed: () -> Bool, limit: Duration = .seconds(120)) {
        let deadline = ContinuousClock.now + limit
        while !observed(), ContinuousClock.now < deadline, !wait(.milliseconds(1)) {}
    }

    /// Waits at most `limit` off the cooperative pool (a Dispatch thread blocks instead), so
    /// other tests go on meanwhile; whether it ended.
    public func ended(within limit: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: self.child.wait(limit)) }
        }
    }

    /// Sends `signal` if it still runs.
    public func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Kills it (SIGKILL) and waits for the end, at most 30 s; safe to call again.
    public func stop() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        _ = child.wait(.seconds(30))
    }

    /// Closes the write end of its standard input, if it is a pipe; safe to call again.
    public func closeInput() {
        inputEnd.withLock { descriptor in
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
        }
    }

    /// Writes `data` whole to its standard input (a pipe), blocking while the pipe is full.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/io`` when the input is closed or not a pipe, or the
    ///   write fails (EPIPE once it has exited).
    public func writeInput(_ data: Data) throws {
        let descriptor = inputEnd.withLock { $0 }
        guard descriptor >= 0 else { throw BuckiaError(.io, "The standard input of \(command) is closed or not a pipe.") }
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < bytes.count, let base = bytes.baseAddress {
                let written = Glibc.write(descriptor, base + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { throw BuckiaError.posix(errno, operation: "write", path: command) }
                offset += written
            }
        }
    }

    /// Reads one line of standard output (or with `errors`, standard error), which must be a
    /// pipe, waiting at most `timeout`; nil at its end or when the time passes.
    public func readLine(timeout: Duration, errors: Bool = false) -> String? {
        let descriptor = errors ? errorOutput : output
        return descriptor >= 0 ? PythonProcess.readLine(from: descriptor, timeout: timeout) : nil
    }
}

extension Spawned {
    /// What the process has written so far with `write` and its kin, to files and pipes
    /// (`wchar` of /proc/PID/io; not what `send` puts on a socket), or nil once it is gone or
    /// where there is no /proc: a kill harness's measure of progress, one read to look at
    /// however much the process has done.
    public var bytesWritten: Int? { inputOutput("wchar") }

    /// What the process has read so far with `read` and its kin (`rchar`), as ``bytesWritten``.
    public var bytesRead: Int? { inputOutput("rchar") }

    private func inputOutput(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
