import BuckiaCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finding the interpreter and the script, and reading the server's startup line.
extension MotoServer {
    static func scriptURL() throws -> URL {
        if let url = Bundle.module.url(forResource: "moto_server", withExtension: "py", subdirectory: "Resources") {
            return url
        }
        throw BuckiaError(.notFound, "moto_server.py is missing from the BuckiaS3Tests bundle.")
    }

    /// The interpreter `python3` on `PATH` runs, resolved once: `python3` may be a shim (pyenv)
    /// that costs far more to start than the interpreter itself, and whose pid is not python's.
    static let pythonExecutable = Result { () throws(BuckiaError) -> URL in
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let candidates = path.split(separator: ":").map {
            URL(fileURLWithPath: String($0)).appendingPathComponent("python3")
        }
        guard let python3 = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw BuckiaError(.notFound, "python3 is not on PATH; the S3 tests need it for moto (\(installHint)).")
        }
        let process = Process()
        process.executableURL = python3
        process.arguments = ["-c", "import sys; print(sys.executable)"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return python3
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let resolved = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return resolved.isEmpty ? python3 : URL(fileURLWithPath: resolved)
    }

    /// Reads one line from a pipe; nil at EOF, on error, or when the timeout passes.
    static func readLine(from descriptor: Int32, timeout: Duration) -> String? {
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
