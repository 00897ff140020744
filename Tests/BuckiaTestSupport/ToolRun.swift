import BuckiaCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs another program found on `PATH` (rclone, curl, python3) with a bound on its running
/// time: one that outlives `limit` is killed and reported, so a hung peer cannot hang the tests.
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
    /// - Throws: ``BuckiaCore/BuckiaError/Code/io`` when the program cannot start or ran past the limit.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], limit: Duration = .seconds(120)) throws -> Result {
        try run(
            path: URL(fileURLWithPath: "/usr/bin/env"), [executable] + arguments,
            exactEnvironment: ProcessInfo.processInfo.environment.merging(environment) { $1 }, limit: limit)
    }

    /// Runs the program at `path` with exactly `exactEnvironment`, waiting at most `limit`.
    public static func run(path: URL, _ arguments: [String], exactEnvironment: [String: String], limit: Duration = .seconds(120)) throws -> Result {
        let executable = path.lastPathComponent
        let process = Process()
        process.executableURL = path
        process.arguments = arguments
        process.environment = exactEnvironment
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("out"), err = folder.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        try process.run()
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        if ended.wait(timeout: .now() + seconds) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw BuckiaError(.io, "\(executable) \(arguments.joined(separator: " ")) ran past \(limit) and was killed.")
        }
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, output: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            errors: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }
}
