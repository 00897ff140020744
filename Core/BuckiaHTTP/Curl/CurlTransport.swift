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
/// body on a reused connection (Docs/Transfers.md). Redirects are not followed, cookies
/// are not kept, responses are not decoded; TLS is verified against the system's CA store (or
/// `caFile`); `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` work as they do for `curl`.
///
/// One transport serves any number of clients: what differs between them (timeouts, CA file,
/// `User-Agent`) travels with each request, and the values given here are only the defaults
/// for a request that leaves them open. ``SharedHTTPTransport`` is the one a process shares.
public final class CurlTransport: HTTPTransport, ShutdownableResource, ThreadOwningResource {
    /// The defaults for a request that leaves a setting open.
    struct Settings: Sendable {
        var timeout: Duration
        var connectTimeout: Duration
        var userAgent: String
        var caFile: String?
    }

    private let loop: CurlLoop
    private let settings: Settings
    /// How many of this transport's transfers exist (a leak shows as a count that stays up).
    private let live = Locked(0)

    /// Creates a transport with its own thread and connection pool.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/io`` when libcurl cannot start.
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
        userAgent: String = BuckiaVersion.userAgent(), caFile: String? = nil
    ) throws {
        loop = try CurlLoop(maximumConnectionsPerHost: maximumConnectionsPerHost)
        settings = Settings(timeout: timeout, connectTimeout: connectTimeout, userAgent: userAgent, caFile: caFile)
    }

    deinit { loop.stop() }

    /// The kernel's id of the transport's thread, once it has started: how tests find it in
    /// `/proc/self/task`.
    package var threadID: Int32? { loop.threadID }

    package var threadIDs: [Int32] { threadID.map { [$0] } ?? [] }

    /// How many of this transport's transfers are still allocated: 0 once every response
    /// (streamed ones included) has been read or dropped and the loop has let them go.
    package var liveTransfers: Int { live.withLock { $0 } }

    /// Lets the transfers in flight finish (a body being streamed to a reader ends as
    /// `cancelled`: it goes at the reader's pace), then ends the thread and closes every
    /// connection; a request made afterwards fails at once (`cancelled`).
    public func shutdown() async {
        await loop.stopAndWait()
    }

    /// A body with a destination is streamed off the libcurl thread and written to the file
    /// on Buckia's blocking-work threads (``BuckiaCore/BlockingWork``), a megabyte at a time: a
    /// slow disk then holds back its own transfer (paused while 4 MiB wait), never the one
    /// thread every other transfer runs on. The body check runs as the bytes are written, and
    /// the file moves over the destination only once every byte has arrived and checked.
    public func perform(_ request: HTTPRequest, destination: URL?, errorBodyLimit: Int) async throws -> HTTPTransportResult {
        guard let destination, request.method != .head else {
            return try await run(request, errorBodyLimit: errorBodyLimit, streaming: false)
        }
        var unchecked = request
        unchecked.bodyCheck = nil
        let result = try await run(unchecked, errorBodyLimit: errorBodyLimit, streaming: true)
        guard let bytes = result.bodyStream else { return result }
        return try await BodyFile.write(bytes, of: result, to: destination, check: request.bodyCheck, limit: request.maximumBodySize)
    }

    /// Streams a 2xx body as libcurl receives it: the transfer pauses while more than
    /// ``CurlBodyBuffer/highWater`` bytes wait for the reader, and a pause is not a stall.
    public func stream(_ request: HTTPRequest, errorBodyLimit: Int) async throws -> HTTPTransportResult {
        try await run(request, errorBodyLimit: errorBodyLimit, streaming: true)
    }

    private func run(_ request: HTTPRequest, errorBodyLimit: Int, streaming: Bool) async throws -> HTTPTransportResult {
        let transfer = try CurlTransfer(
            request, errorBodyLimit: errorBodyLimit, settings: settings, streaming: streaming, live: live)
        do {
            return try await transfer.run(on: loop)
        } catch is HTTPTransportError where transfer.failedOnReusedConnection && request.method != .post {
            // A kept-alive connection the server had closed: once more on a new connection,
            // as browsers do for requests that are safe to repeat. Not a retry of the policy's.
            let fresh = try CurlTransfer(
                request, errorBodyLimit: errorBodyLimit, settings: settings, freshConnection: true,
                streaming: streaming, live: live)
            return try await fresh.run(on: loop)
        }
    }
}
#endif
