import Buckia
import Foundation

/// One entry in the command table: its name, arguments, help, and what it does.
struct Command: Sendable {
    let name: String
    let summary: String
    let usage: String
    let positionals: ClosedRange<Int>
    let options: [OptionSpec]
    let details: String
    let run: @Sendable (Invocation) async throws -> ExitCode

    /// The text `buckia NAME --help` prints.
    var help: String {
        var lines = ["Usage: buckia \(usage)", "", summary]
        if !details.isEmpty { lines += ["", details] }
        let all = options + CLI.globalOptions
        lines += ["", "Options:"]
        for option in all {
            let short = option.short.map { "-\($0), " } ?? "    "
            let long = "--\(option.name)\(option.takesValue ? " VALUE" : "")"
            lines.append("  \(short)\(long.padding(toLength: 20, withPad: " ", startingAt: 0)) \(option.help)")
        }
        lines += ["", "Exit status: 0 success, 1 failure, 2 usage, 3 not found, 4 denied, 5 configuration, 6 conformance failed, 7 partial, 8 check found differences, 9 diff refused."]
        return lines.joined(separator: "\n")
    }
}

/// What a command runs with.
struct Invocation: Sendable {
    let arguments: ParsedArguments
    let environment: [String: String]
    let registry: ProviderRegistry
    let engines: EngineRegistry
    /// What every provider of the run shares (one HTTP transport).
    let resources: SharedResources
    /// Every provider the command made, whose working files go when it ends.
    let made = Locked<[any StorageProvider]>([])

    var positionals: [String] { arguments.positionals }

    func remotes() throws -> RemoteConfiguration {
        try RemoteConfiguration.load(explicitPath: arguments.value("config"), environment: environment, registry: registry)
    }

    /// Where providers write their network events: standard error with `--verbose`, nowhere
    /// without.
    var log: (@Sendable (String) -> Void)? {
        guard arguments.flag("verbose") else { return nil }
        return { line in Console.error("buckia: \(line)") }
    }

    /// The provider behind a configured remote, its configuration first changed by `adjust`.
    func provider(named name: String, adjusting adjust: (inout BuckiaConfiguration) -> Void = { _ in }) throws -> (any StorageProvider, BuckiaConfiguration) {
        var configuration = try remotes().configuration(named: name)
        adjust(&configuration)
        let provider = try registry.makeProvider(for: configuration, environment: environment, log: log, resources: resources)
        made.withLock { $0.append(provider) }
        return (provider, configuration)
    }

    /// Removes the working files (a local remote's `.buckia` folder) of every provider the
    /// command made, so that nothing of Buckia's is left in a user's folder once it ends.
    ///
    /// - Returns: The first failure, after trying every provider.
    func removeWorkingFiles() -> BuckiaError? {
        var first: BuckiaError?
        for provider in made.withLock({ $0 }) {
            do {
                try provider.removeWorkingFiles()
            } catch {
                let failure = BuckiaError.wrapping(error, operation: "remove working files")
                first = first ?? BuckiaError(
                    failure.code, "Buckia's working files (.buckia) could not be removed: \(failure.message) A later run that can removes them.",
                    operation: "remove working files", path: failure.path, cause: failure)
            }
        }
        return first
    }
}

/// Writes to standard output and standard error through `write(2)`, so a closed stream, a
/// full disk or a broken pipe (with SIGPIPE ignored) is an error with an exit status, never a
/// trap inside Foundation's `FileHandle`.
///
/// Text lines (`out`, `error`) cannot fail the command where they are written: the first
/// failure of each stream is remembered and further writes to it are dropped, and the command
/// exits with a failure once it is done (``failure``). Bytes (`writeOut`) throw, so `cat` and
/// `kv get` stop at once.
enum Console {
    private static let failures = Locked<[Int32: Int32]>([:])

    static func out(_ text: String) {
        emit(Data((text + "\n").utf8), to: STDOUT_FILENO)
    }

    static func error(_ text: String) {
        emit(Data((text + "\n").utf8), to: STDERR_FILENO)
    }

    /// Writes `text` to standard error as it is, without a newline (a progress line redrawn
    /// in place).
    static func errorInline(_ text: String) {
        emit(Data(text.utf8), to: STDERR_FILENO)
    }

    /// Whether standard error is a terminal, where a live progress line makes sense.
    static var errorIsTerminal: Bool { !StandardStreams.wasClosed(STDERR_FILENO) && isatty(STDERR_FILENO) == 1 }

    /// Writes bytes to standard output.
    ///
    /// - Throws: ``BuckiaError/Code/io`` naming the stream and the reason (EPIPE, ENOSPC, EBADF).
    static func writeOut(_ data: Data) throws {
        guard !silenced.withLock({ $0 }) else { return }
        if let code = write(data, to: STDOUT_FILENO) {
            throw streamError(code, stream: STDOUT_FILENO)
        }
    }

    /// Standard input as a stream of bytes, read 128 KiB at a time off the task pool (a read
    /// from a pipe or a terminal blocks until the writer writes; a pipe hands out 64 KiB at
    /// most, and a larger buffer would be held whole for each chunk).
    ///
    /// Cancelling the reading task ends a read that is waiting for input: the read waits in
    /// `poll` on standard input and on a pipe of its own, which the cancellation writes to (a
    /// blocked `read` would wait on for a writer that may never write, and the process takes
    /// its signals on a thread of its own, so no signal interrupts it either).
    ///
    /// - Throws (from the stream): ``BuckiaError/Code/io`` naming the reason a read failed;
    ///   ``BuckiaError/Code/cancelled`` once the task is cancelled.
    static func standardInput() -> ByteStream {
        ByteStream {
            let wake = try StandardInputWake.shared()
            return try await withTaskCancellationHandler {
                try await BlockingWork.run("read standard input") {
                    if StandardStreams.wasClosed(STDIN_FILENO) {
                        throw BuckiaError(.io, "Standard input is closed; pipe the bytes to store into rcat.", operation: "read standard input")
                    }
                    try wake.waitForInput()
                    var chunk = Data(count: 1 << 17)
                    while true {
                        let count = chunk.withUnsafeMutableBytes { buffer in systemRead(STDIN_FILENO, buffer.baseAddress, buffer.count) }
                        if count < 0 {
                            if errno == EINTR { continue }
                            let reason = String(cString: strerror(errno))
                            throw BuckiaError(.io, "Standard input could not be read (\(reason)); nothing was stored.", operation: "read standard input")
                        }
                        guard count > 0 else {
                            // An end that comes with an interrupt is the producer dying of it.
                            if ProcessEnd.signalArrived {
                                throw BuckiaError(.cancelled, "Standard input ended as the process was interrupted; nothing was stored.", operation: "read standard input")
                            }
                            return nil
                        }
                        return chunk.prefix(count)
                    }
                }
            } onCancel: {
                wake.cancel()
            }
        }
    }

    /// The first failure writing either stream, as an error, or nil when every write worked.
    static var failure: BuckiaError? {
        failures.withLock { $0 }.sorted { $0.key < $1.key }.first.map { streamError($0.value, stream: $0.key) }
    }

    /// Drops everything written from now on (an interrupted process's last word aside).
    static func silence() { silenced.withLock { $0 = true } }

    /// Writes one line to standard error even after ``silence()``: an interrupted process's
    /// last word, which no message about a failure the interrupt itself caused may follow.
    static func lastWord(_ text: String) {
        _ = write(Data((text + "\n").utf8), to: STDERR_FILENO)
    }

    private static let silenced = Locked(false)

    private static func emit(_ data: Data, to stream: Int32) {
        guard !silenced.withLock({ $0 }), failures.withLock({ $0[stream] == nil }) else { return }
        if let code = write(data, to: stream) { failures.withLock { $0[stream] = $0[stream] ?? code } }
    }

    /// Writes all of `data`, returning the `errno` that stopped it, if any.
    private static func write(_ data: Data, to stream: Int32) -> Int32? {
        if StandardStreams.wasClosed(stream) { return EBADF }
        return data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Int32? in
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(stream, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
    }

    private static func streamError(_ code: Int32, stream: Int32) -> BuckiaError {
        let name = stream == STDOUT_FILENO ? "standard output" : "standard error"
        let reason = String(cString: strerror(code))
        return BuckiaError(.io, "The \(name) could not be written (\(reason)); the output is incomplete.", operation: "write \(name)")
    }

    /// One clear sentence for a failure; credentials never reach here (errors redact them).
    static func report(_ error: BuckiaError) {
        var text = error.message
        if let path = error.path, !path.isEmpty, !text.contains(path) { text += " (\(path))" }
        // Messages carry text from outside (a server's words, a listed name): never raw
        // control characters on a terminal.
        Console.error("buckia: \(text.escapingControlCharacters)")
    }
}

private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }

/// The pipe that ends a wait for standard input when the reading task is cancelled: one per
/// process, written once and never drained, so every later wait ends at once too (a command
/// that reads standard input reads it once).
private final class StandardInputWake: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    private init(readEnd: Int32, writeEnd: Int32) {
        self.readEnd = readEnd
        self.writeEnd = writeEnd
    }

    private static let made = Locked<StandardInputWake?>(nil)

    static func shared() throws -> StandardInputWake {
        try made.withLock { made in
            if let made { return made }
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw BuckiaError.posix(errno, operation: "read standard input", path: "pipe") }
            for end in ends {
                // Not inherited by a child, and a write to a full pipe never blocks `cancel()`.
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, O_NONBLOCK)
            }
            let wake = StandardInputWake(readEnd: ends[0], writeEnd: ends[1])
            made = wake
            return wake
        }
    }

    /// Marks the wait cancelled: the current and every later ``waitForInput()`` ends.
    func cancel() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)  // a full pipe already says the same
    }

    /// Returns once standard input has bytes, an end or an error to read.
    ///
    /// - Throws: ``BuckiaError/Code/cancelled`` once ``cancel()`` was called.
    func waitForInput() throws {
        var fds = [pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0), pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        while true {
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                throw BuckiaError.posix(errno, operation: "read standard input", path: "standard input")
            }
            if fds[1].revents != 0 {
                throw BuckiaError(.cancelled, "Reading standard input was cancelled; nothing was stored.", operation: "read standard input")
            }
            if fds[0].revents != 0 { return }
        }
    }
}

/// The three standard streams as the process found them.
///
/// A stream closed at start (`<&-`, `>&-`) would otherwise be handed to the next file the
/// process opens — a database, an object being downloaded — and reads or writes meant for
/// the stream would go to that file. ``reserve()`` fills each closed one with `/dev/null` before
/// anything else opens a file, and remembers it was closed, so using it is an error instead.
enum StandardStreams {
    private static let closedAtStart = Locked<Set<Int32>>([])

    /// Call first thing in `main`.
    static func reserve() {
        for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            let replacement = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY)
            if replacement >= 0, replacement != fd {
                _ = dup2(replacement, fd)
                close(replacement)
            }
            closedAtStart.withLock { _ = $0.insert(fd) }
        }
    }

    /// Whether the stream was closed when the process started.
    static func wasClosed(_ fd: Int32) -> Bool { closedAtStart.withLock { $0.contains(fd) } }
}

/// Reads standard input through `read(2)`, bounded.
enum StandardInput {
    /// All of standard input, at most `limit` bytes.
    ///
    /// - Throws: ``BuckiaError/Code/io`` when standard input is closed or unreadable (a
    ///   directory), ``BuckiaError/Code/invalidConfiguration`` when it holds more than `limit`.
    static func readAll(limit: Int) throws -> Data {
        if StandardStreams.wasClosed(STDIN_FILENO) {
            throw BuckiaError(.io, "Standard input is closed; give the value as an argument or pipe it in.", operation: "read standard input")
        }
        var data = Data()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(STDIN_FILENO, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                let reason = errno == EBADF ? "it is closed" : String(cString: strerror(errno))
                throw BuckiaError(.io, "Standard input could not be read (\(reason)); give the value as an argument or pipe it in.", operation: "read standard input")
            }
            if count == 0 { return data }
            guard data.count + count <= limit else {
                throw BuckiaError(
                    .invalidConfiguration,
                    "Standard input holds more than \(limit / 1_048_576) MiB; a key-value entry is meant for small values. Store large files with cp.",
                    operation: "read standard input")
            }
            data.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]).bindMemory(to: UInt8.self))
        }
    }
}
