import BuckiaTestSupport
import Foundation

/// Runs the built `buckia` executable in a private XDG environment.
struct CLIHarness: ~Copyable {
    let home: URL
    var environment: [String: String]

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        // Temporary files (stdin relays, downloads) inside the home too, never the machine's /tmp.
        try FileManager.default.createDirectory(at: home.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        environment = [
            "HOME": home.path, "XDG_DATA_HOME": home.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "PATH": "/usr/bin:/bin",
            "TMPDIR": home.appendingPathComponent("tmp").path,
        ]
    }

    deinit { try? FileManager.default.removeItem(at: home) }

    static var executable: URL {
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return products.appendingPathComponent("buckia")
    }

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    func run(_ arguments: String..., extraEnvironment: [String: String] = [:]) throws -> Result {
        try runArray(arguments, extraEnvironment: extraEnvironment)
    }

    func runArray(_ arguments: [String], extraEnvironment: [String: String] = [:]) throws -> Result {
        try runProgram(CLIHarness.executable.path, arguments, extraEnvironment: extraEnvironment)
    }

    /// Runs `buckia` on a thread of its own, not the cooperative pool: an async test that
    /// waits for a child process this way leaves the pool's few threads to the tests that need
    /// them (a synchronous wait holds one for as long as the child runs).
    func runOffPool(_ arguments: String...) async throws -> Result {
        let (environment, home) = (environment, home)
        return try await offPool { try CLIHarness.execute(CLIHarness.executable.path, arguments, environment: environment, directory: home) }
    }

    /// Runs another program (a wrapper such as `script`) in the same environment.
    func runProgram(_ path: String, _ arguments: [String], extraEnvironment: [String: String] = [:]) throws -> Result {
        try Self.execute(path, arguments, environment: environment.merging(extraEnvironment) { $1 }, directory: home)
    }

    /// Runs the program to its end (at most two minutes) with its output in files
    /// (``BuckiaTestSupport/ToolRun``): a pipe's end of file never comes while another child
    /// holds a copy of its write end.
    static func execute(_ path: String, _ arguments: [String], environment: [String: String], directory: URL) throws -> Result {
        let run = try ToolRun.run(path: URL(fileURLWithPath: path), arguments, exactEnvironment: environment, directory: directory)
        return Result(status: run.status, stdout: run.output, stderr: run.errors)
    }

    func write(_ text: String, to relative: String) throws -> URL {
        let url = home.appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        return url
    }
}
