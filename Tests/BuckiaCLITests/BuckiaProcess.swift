import Foundation

/// A `buckia` started in the background, for tests that act on it while it runs: every wait is
/// a bounded number of short polls, and a process still running at the end is killed.
final class BuckiaProcess {
    let process = Process()
    /// Where standard error goes (read with ``errorText``).
    let errorFile: URL

    /// Starts the built `buckia` with `arguments` in `home`, standard input /dev/null, standard
    /// output `stdout` (a descriptor the caller keeps, or /dev/null) and standard error a file.
    init(_ arguments: [String], home: URL, environment: [String: String], stdout: FileHandle? = nil) throws {
        errorFile = home.appendingPathComponent(".stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        process.executableURL = CLIHarness.executable
        process.arguments = arguments
        process.currentDirectoryURL = home
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout ?? FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: errorFile)
    }

    var pid: Int32 { process.processIdentifier }

    /// What it wrote to standard error so far.
    var errorText: String { String(decoding: (try? Data(contentsOf: errorFile)) ?? Data(), as: UTF8.self) }

    /// Waits for it to exit, polling every 10 ms at most `polls` times (60 s by default); one
    /// still running then is killed, and the wait fails.
    ///
    /// - Returns: The exit status; a death by signal is an error.
    @discardableResult
    func wait(polls: Int = 6_000) throws -> Int32 {
        var count = 0
        while process.isRunning && count < polls {
            count += 1
            usleep(10_000)
        }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw Failure(description: "buckia \(process.arguments ?? []) still ran after \(polls) polls and was killed; stderr: \(errorText)")
        }
        process.waitUntilExit()
        guard process.terminationReason == .exit else {
            throw Failure(description: "buckia \(process.arguments ?? []) died of signal \(process.terminationStatus); stderr: \(errorText)")
        }
        return process.terminationStatus
    }

    /// Polls every millisecond, at most `polls` times, until `condition` holds or the process
    /// has exited; returns whether the condition held.
    func poll(until condition: () -> Bool, polls: Int = 30_000) -> Bool {
        var count = 0
        while !condition() {
            guard process.isRunning, count < polls else { return condition() }
            count += 1
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
