import BuckiaCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What test servers written in Python share: finding the interpreter and reading the one
/// startup line a server prints.
public enum PythonProcess {
    /// The interpreter `python3` on `PATH` runs, resolved once: `python3` may be a shim (pyenv)
    /// that costs far more to start than the interpreter itself, and whose pid is not python's.
    public static func executable() throws -> URL {
        try resolved.get()
    }

    private static let resolved = Result { () throws(BuckiaError) -> URL in
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let candidates = path.split(separator: ":").map {
            URL(fileURLWithPath: String($0)).appendingPathComponent("python3")
        }
        guard let python3 = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw BuckiaError(.notFound, "python3 is not on PATH; the test servers need it (Tools/test installs it).")
        }
        let text: String
        do {
            text = try ToolRun.run(path: python3, ["-c", "import sys; print(sys.executable)"], exactEnvironment: ProcessInfo.processInfo.environment, limit: .seconds(60)).output
        } catch {
            return python3  // the servers' own start then says what is wrong with it
        }
        let resolved = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return resolved.isEmpty ? python3 : URL(fileURLWithPath: resolved)
    }

    /// Starts a Python test server `script` with `arguments` and waits (at most `timeout`) for
    /// the port it prints first. Its stdin is a pipe: closing it stops a server that watches it.
    public static func startServer(script: URL, arguments: [String], timeout: Duration = .seconds(10)) throws -> (Spawned, Int) {
        guard FileManager.default.fileExists(atPath: script.path) else { throw BuckiaError(.notFound, "The test server \(script.path) is missing.") }
        let server = try Spawned(try executable(), [script.path] + arguments, input: .pipe, output: .pipe)
        guard let line = server.readLine(timeout: timeout), let port = Int(line) else {
            server.stop()
            throw BuckiaError(.io, "\(script.lastPathComponent) did not print its port.")
        }
        return (server, port)
    }

    /// Reads one line from a pipe; nil at end of file, on error, or when the timeout passes.
    public static func readLine(from descriptor: Int32, timeout: Duration) -> String? {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { return nil }
            guard poller.revents != 0 else { continue }
            var byte: UInt8 = 0
            guard read(descriptor, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }
}
