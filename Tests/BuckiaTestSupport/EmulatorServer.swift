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
/// ``stop()`` sends SIGKILL.
public final class EmulatorServer: Sendable {
    /// `http://127.0.0.1:PORT`.
    public let endpoint: URL
    private let server: Spawned

    /// Starts `script` with `arguments` and waits (at most 10 s) for its port.
    public init(script: URL, arguments: [String]) throws {
        let (server, port) = try PythonProcess.startServer(script: script, arguments: arguments)
        guard let endpoint = URL(string: "http://127.0.0.1:\(port)") else {
            server.stop()
            throw BuckiaError(.io, "The emulator's port \(port) makes no URL.")
        }
        self.endpoint = endpoint
        self.server = server
    }

    deinit { stop() }

    /// Stops the emulator; safe to call twice.
    public func stop() {
        server.closeInput()
        server.stop()
    }

    /// Calls the control endpoint `name` with a JSON `body` (GET sends none).
    public func control(_ name: String, method: HTTPRequest.Method = .post, body: [String: any Sendable] = [:]) async throws -> Data {
        let data = try JSONSerialization.data(withJSONObject: body)
        let request = HTTPRequest(method, endpoint.appendingPathComponent("_emulator/\(name)"), body: method == .get ? .none : .data(data))
        return try await HTTPClient(configuration: .init(retryPolicy: .none)).send(request).data
    }
}
