import BuckiaCore
import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs another program found on `PATH` (rclone, curl, python3) with a bound on its running
/// time: one that outlives `limit` is killed and reported, so a hung peer cannot hang the tests.
///
/// The program is started with `posix_spawn` and reaped with `waitpid`, its output in files,
/// not with Foundation's `Process`. On Linux `Process` lets a child inherit the parent's other
/// descriptors, and sees a child end only when a socket the child holds closes: a server
/// another test started at the same moment kept a `buckia` run's socket and stdout pipe, so
/// the run's end never came, and a whole test run hung 20 minutes with `buckia` exited and
/// unreaped. Here the child gets no descriptor but its three, and its end is the kernel's word.
public enum ToolRun {
    /// What a finished run printed and how it ended.
    public struct Result: Sendable {
        public let status: Int32
        public let output: String
        public let errors: String
    }

    /// Runs `executable` with `arguments`, the process's environment plus `environment`, and
    /// waits at most `limit`.
    ///
    /// The program gets a home of its own for the run (``TestHome/environment(in:)``: `HOME`,
    /// the XDG folders, and rclone's and the AWS tools' configuration files inside it), so it
    /// reads none of the machine user's configuration and writes nothing outside folders the
    /// tests made; what `environment` names wins.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/io`` when the program cannot start or ran past the limit.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], limit: Duration = .seconds(120)) throws -> Result {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-tool-home-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: home) }
        let isolated = ProcessInfo.processInfo.environment.merging(TestHome.environment(in: home)) { $1 }
        return try run(path: URL(fileURLWithPath: "/usr/bin/env"), [executable] + arguments, exactEnvironment: isolated.merging(environment) { $1 }, limit: limit)
    }

    /// Runs the program at `path` with exactly `exactEnvironment`, waiting at most `limit`.
    /// With `directory`, the program runs there.
    public static func run(
        path: URL, _ arguments: [String], exactEnvironment: [String: String], directory: URL? = nil, limit: Duration = .seconds(120)
    ) throws -> Result {
        let executable = path.lastPathComponent
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("out"), err = folder.appendingPathComponent("err")
        let pid = try spawn(path.path, arguments, environment: exactEnvironment, directory: directory?.path, output: out.path, errors: err.path)
        let child = Child(pid)
        if !child.wait(limit) {
            // A hang is worth its backtraces: SIGABRT has the Swift runtime print every
            // thread's to standard error (a program that is not Swift just ends), then SIGKILL.
            let state = Self.state(of: pid)
            kill(pid, SIGABRT)
            if !child.wait(.seconds(30)) { kill(pid, SIGKILL) }
            _ = child.wait(nil)
            let errors: String
            do {
                errors = try text(of: err)
            } catch {
                errors = "(it could not be read: \(error))"
            }
            throw BuckiaError(
                .io, "\(executable) \(arguments.joined(separator: " ")) ran past \(limit) (process state \(state)) and was stopped. Its standard error:\n\(errors.suffix(8_000))")
        }
        return Result(status: child.status, output: try text(of: out), errors: try text(of: err))
    }

    /// A file the child wrote, as text: bytes that are not UTF-8 are replaced, not an error (a
    /// tool may print any bytes); a file that cannot be read is.
    private static func text(of url: URL) throws -> String {
        String(decoding: try Data(contentsOf: url), as: UTF8.self)
    }

    /// Starts `path` with `posix_spawn`: standard input from /dev/null, output and errors to
    /// the files named, and no other descriptor of this process (`closefrom`), so the child
    /// holds none of another test's pipes or servers' sockets.
    static func spawn(_ path: String, _ arguments: [String], environment: [String: String], directory: String?, output: String, errors: String) throws -> pid_t {
        try spawn(path, arguments, environment: environment, directory: directory, streams: [.null, .file(output), .file(errors)])
    }

    /// Where one of a child's three standard descriptors leads.
    enum Stream {
        /// /dev/null.
        case null
        /// A file, created or truncated.
        case file(String)
        /// A descriptor of this process (duplicated into the child; the caller keeps it).
        case descriptor(Int32)
    }

    /// Starts `path` with `streams` as its descriptors 0, 1, 2 (and on, for a listening socket
    /// a child is handed) and no other descriptor of this process, with no signal blocked and every signal's default action (as a shell
    /// starts a program; a thread of an async test has SIGTERM blocked, and a child would keep
    /// that mask).
    static func spawn(_ path: String, _ arguments: [String], environment: [String: String], directory: String?, streams: [Stream]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, stream) in zip(Int32(0)..., streams) {
            switch stream {
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let file): posix_spawn_file_actions_addopen(&actions, target, file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, target)
            }
        }
        var refused = buckia_spawn_close_from(&actions, Int32(max(3, streams.count)))
        if refused == 0, let directory { refused = buckia_spawn_chdir(&actions, directory) }
        guard refused == 0 else { throw BuckiaError.posix(refused, operation: "spawn", path: path) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") }
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, &attributes, argv + [nil], envp + [nil])
        guard status == 0 else { throw BuckiaError.posix(status, operation: "spawn", path: path) }
        return pid
    }

    /// A spawned child, reaped by a thread of its own that blocks in `waitpid`: its end is
    /// seen when the kernel reports it, whatever descriptors anything else still holds.
    final class Child: Sendable {
        let pid: pid_t
        private let ended = DispatchSemaphore(value: 0)
        private let termination = Locked<Termination?>(nil)

        init(_ pid: pid_t) {
            self.pid = pid
            let (ended, termination) = (ended, termination)
            Thread.detachNewThread {
                var status: Int32 = 0
                var reaped = waitpid(pid, &status, 0)
                while reaped < 0 && errno == EINTR { reaped = waitpid(pid, &status, 0) }
                let how: Termination =
                    reaped < 0 ? .unknown : (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
                termination.withLock { $0 = how }
                ended.signal()
            }
        }

        /// Waits for the end, at most `limit` (nil: for as long as it takes); whether it came.
        func wait(_ limit: Duration?) -> Bool {
            guard let limit else {
                ended.wait()
                ended.signal()
                return true
            }
            let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
            guard ended.wait(timeout: .now() + seconds) == .success else { return false }
            ended.signal()  // ended for every later wait too
            return true
        }

        /// How it ended; nil while it runs.
        var ending: Termination? { termination.withLock { $0 } }

        /// The exit status once ended: its code; killed by a signal, 128 plus the signal, as a
        /// shell says; reaped by someone else (no status to tell), -1, never a false success.
        var status: Int32 {
            switch ending {
            case .exited(let code): code
            case .signalled(let signal): 128 + signal
            case .unknown, nil: -1
            }
        }
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
        /// Reaped by someone else: no status to tell.
        case unknown
    }

    /// The state letter `/proc/PID/stat` gives (R running, S sleeping, Z exited and not yet
    /// reaped: an end its watcher missed), or "unknown".
    static func state(of pid: Int32) -> String {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return "unknown" }
        return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init) ?? "unknown"
    }
}
