import BuckiaCore
import BuckiaTestSupport
import BuckiaHTTP
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Python test server (`Resources/test_server.py`).
///
/// Most tests share one server per test process (``shared()``): requests carry test-chosen
/// ids, so parallel tests never see each other's counters, and the machine does not start
/// dozens of interpreters at once. Tests that need a server to go away start their own.
///
/// It listens on 127.0.0.1 only, on a port it chooses and prints, and is stopped with
/// SIGKILL. It also exits when its stdin closes, which happens when the test process ends, so
/// even the shared server never outlives the tests.
final class TestServer: Sendable {
    let port: Int
    private let server: Spawned

    private init(port: Int, server: Spawned) {
        self.port = port
        self.server = server
    }

    /// The server shared by every test of this process, started on first use.
    static func shared() async throws -> TestServer {
        try await sharedServer.value
    }

    private static let sharedServer = Task { try await start() }

    /// Starts a server and waits (at most 10 s) for it to print its port.
    ///
    /// The blocking work runs on a Dispatch thread, never on the cooperative pool (two
    /// threads on a two-core machine), so other tests keep running meanwhile.
    static func start() async throws -> TestServer {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try startBlocking() })
            }
        }
    }

    private static func startBlocking() throws -> TestServer {
        let (server, port) = try PythonProcess.startServer(script: try scriptURL(), arguments: [])
        return TestServer(port: port, server: server)
    }

    /// Stops the server; safe to call more than once.
    func stop() {
        server.closeInput()
        server.stop()
    }

    /// A URL on this server; `path` may carry a query.
    func url(_ path: String) throws -> URL {
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else {
            throw BuckiaError(.invalidPath, "Not a URL path: \(path)")
        }
        return url
    }

    /// How many requests the server counted for a test-chosen id.
    func count(_ id: String) async throws -> Int {
        let response = try await HTTPClient().send(HTTPRequest(.get, try url("/count/\(id)")))
        return try JSONDecoder().decode([String: Int].self, from: response.data)["count"] ?? -1
    }

    /// Waits until the server has counted `count` requests for `id` (it answers after at most
    /// 120 s either way) and returns the count then.
    func awaitCount(_ id: String, atLeast count: Int = 1) async throws -> Int {
        let response = try await HTTPClient().send(HTTPRequest(.get, try url("/await/\(id)?count=\(count)"), timeout: .seconds(610)))
        return try JSONDecoder().decode([String: Int].self, from: response.data)["count"] ?? -1
    }

    private static func scriptURL() throws -> URL {
        if let url = Bundle.module.url(forResource: "test_server", withExtension: "py", subdirectory: "Resources") {
            return url
        }
        let beside = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Resources/test_server.py")
        guard FileManager.default.fileExists(atPath: beside.path) else {
            throw BuckiaError(.notFound, "test_server.py is missing from the test bundle.")
        }
        return beside
    }
}

/// Runs `body` with the shared server.
func withTestServer<Result>(_ body: (TestServer) async throws -> Result) async throws -> Result {
    try await body(try await TestServer.shared())
}

/// Runs `body` with a server of its own, and always stops it.
func withOwnServer<Result>(_ body: (TestServer) async throws -> Result) async throws -> Result {
    let server = try await TestServer.start()
    do {
        let result = try await body(server)
        server.stop()
        return result
    } catch {
        server.stop()
        throw error
    }
}
