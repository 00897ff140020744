import BuckiaCore
import Foundation

/// The bounds an ``HTTPServer`` holds every client to.
public struct HTTPServerLimits: Sendable {
    /// The longest request line (method, target, version), in bytes: longer is `414`.
    public var requestLineBytes = 16 * 1024
    /// The most bytes of header fields: more is `431`.
    public var headerBytes = 64 * 1024
    /// The most header fields: more is `431`.
    public var headerCount = 128
    /// Connections served at once. One more closes the connection idle the longest (one
    /// waiting for a request or still sending its head) to make room; only when every
    /// connection is inside a request is the newcomer answered `503` and closed.
    public var maximumConnections = 256
    /// How long a client may take to send a request's head, and may stall sending its body.
    public var readTimeout: Duration = .seconds(30)
    /// How long a kept-alive connection may wait for its next request.
    public var idleTimeout: Duration = .seconds(60)

    /// The defaults.
    public init() {}
}

/// A request head as the server read it.
public struct HTTPServerRequest: Sendable {
    /// The method token.
    public var method: String
    /// The request target as sent (`/bucket/key?query`).
    public var target: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String
    /// Every header field in order; names as sent.
    public var headers: [(name: String, value: String)]

    /// Every value of `name` (case-insensitive).
    public func values(_ name: String) -> [String] {
        headers.compactMap { $0.name.equalsIgnoringASCIICase(name) ? $0.value : nil }
    }
}

/// A response: status, headers, and a body held in memory or streamed.
public struct HTTPServerResponse: Sendable {
    /// How the body is produced.
    public enum Body: Sendable {
        /// Bytes in memory.
        case data(Data)
        /// `length` bytes (chunked when nil) written by `produce` through the writer it is given.
        case stream(length: Int64?, produce: @Sendable (HTTPBodyWriter) throws -> Void)
    }

    /// The status code.
    public var status: Int
    /// Header fields; the server adds `Content-Length` or `Transfer-Encoding`, `Date` and `Connection`.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: Body

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: Body = .data(Data())) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Answers requests. It runs on the connection's own thread (never the cooperative pool), so it
/// may block: read the body as it arrives, wait for a backend.
public protocol HTTPServerHandler: Sendable {
    /// The response to `request`, reading its body from `body` as needed.
    func respond(to request: HTTPServerRequest, body: HTTPRequestBody) throws -> HTTPServerResponse
}
