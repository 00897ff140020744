import BuckiaCore
import BuckiaHTTP
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running Python emulator (B2's, Bunny's): its process, its address, and its control
/// endpoints (`/_emulator/NAME`), shared by the emulators' typed fronts.
///
/// It listens on 127.0.0.1 and dies with the test process: it exits when its stdin closes, and
/// ``stop()`` sends SIGKILL (a child of an async test inherits a blocked SIGTERM).
public final class EmulatorServer: Sendable {
    /// `http://127.0.0.1:PORT`.
    public let endpoint: URL
    private let child: Locked<(process: Process, input: Pipe)?>

    /// Starts `script` with `arguments` and waits (at most 10 s) for its port.
    public init(script: URL, arguments: [String]) throws {
        let (process, input, port) = try PythonProcess.startServer(script: script, arguments: arguments)
        guard let endpoint = URL(string: "http://127.0.0.1:\(port)") else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw BuckiaError(.io, "The emulator's port \(port) makes no URL.")
        }
        self.endpoint = endpoint
        child = Locked((process, input))
    }

    deinit { stop() }

    /// Stops the emulator; safe to call twice.
    public func stop() {
        child.withLock { child in
            guard let running = child else { return }
            child = nil
            try? running.input.fileHandleForWriting.close()
            if running.process.isRunning { kill(running.process.processIdentifier, SIGKILL) }
            running.process.waitUntilExit()
        }
    }

    /// Calls the control endpoint `name` with a JSON `body` (GET sends none).
    public func control(_ name: String, method: HTTPRequest.Method = .post, body: [String: any Sendable] = [:]) async throws -> Data {
        let data = try JSONSerialization.data(withJSONObject: body)
        let request = HTTPRequest(method, endpoint.appendingPathComponent("_emulator/\(name)"), body: method == .get ? .none : .data(data))
        return try await HTTPClient(configuration: .init(retryPolicy: .none)).send(request).data
    }
}
