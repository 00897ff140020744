#if canImport(CCurl)
import BuckiaCore
import CCurl
import Foundation

/// The transport over libcurl, Buckia's default on Linux: one thread runs every transfer
/// through libcurl's multi interface, connections are kept alive per host, bodies stream
/// through fixed buffers both ways, and a stalled transfer is abandoned by a low-speed timeout
/// rather than a whole-request one.
///
/// It exists because FoundationNetworking's URLSession, on Linux, can deadlock when a task is
/// cancelled, traps on some malformed responses, and re-sends a retried upload without its
/// body on a reused connection (Docs/Architecture.md). Redirects are not followed, cookies
/// are not kept, responses are not decoded; TLS is verified against the system's CA store (or
/// `caFile`); `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` work as they do for `curl`.
public final class CurlTransport: HTTPTransport {
    /// What every transfer of this transport shares.
    struct Settings: Sendable {
        var timeout: Duration
        var connectTimeout: Duration
        var userAgent: String
        var caFile: String?
    }

    private let loop: CurlLoop
    private let settings: Settings

    /// Creates a transport with its own thread and connection pool.
    ///
    /// - Parameters:
    ///   - maximumConnectionsPerHost: The most connections open to one host at once.
    ///   - timeout: How long a transfer may move no byte (waiting for the first byte
    ///     included) before it is abandoned; ``HTTPRequest/timeout`` overrides it per request.
    ///   - connectTimeout: How long connecting (TCP and TLS) may take.
    ///   - userAgent: Sent unless a request sets its own.
    ///   - caFile: A PEM file of the certificate authorities to trust instead of the system's.
    public init(
        maximumConnectionsPerHost: Int = 16, timeout: Duration = .seconds(60), connectTimeout: Duration = .seconds(10),
        userAgent: String = "Buckia", caFile: String? = nil
    ) throws {
        loop = try CurlLoop(maximumConnectionsPerHost: maximumConnectionsPerHost)
        settings = Settings(timeout: timeout, connectTimeout: connectTimeout, userAgent: userAgent, caFile: caFile)
    }

    deinit { loop.stop() }

    public func perform(_ request: HTTPRequest, destination: URL?, errorBodyLimit: Int) async throws -> HTTPTransportResult {
        let transfer = try CurlTransfer(request, destination: destination, errorBodyLimit: errorBodyLimit, settings: settings)
        do {
            return try await transfer.run(on: loop)
        } catch is HTTPTransportError where transfer.failedOnReusedConnection && request.method != .post {
            // A kept-alive connection the server had closed: once more on a new connection,
            // as browsers do for requests that are safe to repeat. Not a retry of the policy's.
            let fresh = try CurlTransfer(
                request, destination: destination, errorBodyLimit: errorBodyLimit, settings: settings, freshConnection: true)
            return try await fresh.run(on: loop)
        }
    }
}
#endif
