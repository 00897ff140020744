import BuckiaTestSupport
import Foundation

/// A `buckia` started in the background, for tests that act on it while it runs: every wait
/// is bounded, and a process still running at the end is killed. Started as ``Spawned``, not
/// with Foundation's `Process`, whose end can go unseen (ToolRun says why).
final class BuckiaProcess {
    let process: Spawned
    let arguments: [String]
    /// Where standard error goes (read with ``errorText``).
    let errorFile: URL

    /// Starts the built `buckia` with `arguments` in `home`, standard input /dev/null, standard
    /// output `stdout` (a descriptor the caller keeps, or /dev/null) and standard error a file.
    init(_ arguments: [String], home: URL, environment: [String: String], stdout: FileHandle? = nil) throws {
        errorFile = home.appendingPathComponent(".stderr-\(UUID().uuidString)")
        self.arguments = arguments
        process = try Spawned(
            CLIHarness.executable, arguments, environment: environment, directory: home,
            output: stdout.map { .descriptor($0.fileDescriptor) } ?? .null, errors: .file(errorFile))
    }

    deinit {
        process.stop()
        try? FileManager.default.removeItem(at: errorFile)
    }

    var pid: Int32 { process.pid }

    /// What it wrote to standard error so far.
    var errorText: String { String(decoding: (try? Data(contentsOf: errorFile)) ?? Data(), as: UTF8.self) }

    /// Waits for it to exit, at most `polls` times 10 ms (60 s by default); one still running
    /// then is killed, and the wait fails.
    ///
    /// - Returns: The exit status; a death by signal is an error.
    @discardableResult
    func wait(polls: Int = 6_000) throws -> Int32 {
        guard process.wait(.milliseconds(10 * polls)) else {
            process.stop()
            throw Failure(description: "buckia \(arguments) still ran after \(polls) polls and was killed; stderr: \(errorText)")
        }
        guard case .exited(let status) = process.termination else {
            throw Failure(description: "buckia \(arguments) ended by \(String(describing: process.termination)); stderr: \(errorText)")
        }
        return status
    }

    /// Kills it with SIGKILL and waits for its end; whether the kill is what ended it (false
    /// when it had already exited).
    func killed() -> Bool {
        process.stop()
        return process.termination == .signalled(SIGKILL)
    }

    /// Polls every millisecond until `condition` holds or the process has exited, for at most
    /// `polls` milliseconds of waiting; returns whether the condition held.
    func poll(until condition: () -> Bool, polls: Int = 30_000) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(polls)
        while !condition() {
            guard process.isRunning, ContinuousClock.now < deadline else { return condition() }
            usleep(1_000)
        }
        return true
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }
}

/// A private home for tests that start `buckia` in the background, with a local remote `k:`
/// rooted at `<home>/root`; removed afterwards.
struct BackgroundHome: ~Copyable {
    let home: URL
    let root: URL
    let environment: [String: String]

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-bg-\(UUID().uuidString)")
        root = home.appendingPathComponent("root")
        for folder in ["root", "tmp", "out"] {
            try FileManager.default.createDirectory(at: home.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        environment = Self.environment(home: home, ["BUCKIA_REMOTE_K_PROVIDER": "local", "BUCKIA_REMOTE_K_ROOT": root.path])
    }

    deinit {
        do {
            try FileManager.default.removeItem(at: home)
        } catch {
            print("\(home.path) was left behind: \(error)")
        }
    }

    /// A `buckia` environment that reads and writes only under `home` (its XDG folders and
    /// temporary folder), with `extra` (remotes, mostly) added.
    static func environment(home: URL, _ extra: [String: String] = [:]) -> [String: String] {
        [
            "HOME": home.path, "XDG_DATA_HOME": home.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "XDG_CACHE_HOME": home.appendingPathComponent("cache").path,
            "XDG_STATE_HOME": home.appendingPathComponent("state").path, "TMPDIR": home.appendingPathComponent("tmp").path,
            "PATH": "/usr/bin:/bin",
        ].merging(extra) { $1 }
    }

    func start(_ arguments: String..., stdout: FileHandle? = nil) throws -> BuckiaProcess {
        try BuckiaProcess(arguments, home: home, environment: environment, stdout: stdout)
    }

    /// Runs `buckia` to the end (bounded) and returns its status and standard error.
    func run(_ arguments: String...) throws -> (status: Int32, stderr: String) {
        let process = try BuckiaProcess(arguments, home: home, environment: environment)
        let status = try process.wait()
        return (status, process.errorText)
    }

    /// Paths (relative to the home) of every Buckia temporary file or folder under it.
    func temporaries() -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: home.path) else { return [] }
        var found: [String] = []
        while let path = walker.nextObject() as? String {
            let name = (path as NSString).lastPathComponent
            if name.hasPrefix(".buckia-") && name.hasSuffix(".tmp") { found.append(path) }
        }
        return found
    }
}
