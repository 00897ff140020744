import BuckiaCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one HTTP transport every HTTP provider (S3, B2, Bunny) sends its requests through.
///
/// It adds, over any ``HTTPTransport``, what storage traffic needs:
/// - **Bounded memory.** File bodies go out with `upload(for:fromFile:)` (a real
///   `Content-Length`, never chunked); downloads land in a file through `download(for:)` and
///   are moved into place only when the status is 2xx, so an error body never clobbers the
///   destination.
/// - **Retries** of transient failures only, with exponential backoff, full jitter and
///   `Retry-After` (see ``RetryPolicy``).
/// - **Errors** as ``BuckiaCore/BuckiaError`` with a code to switch on and the raw facts in the
///   cause (``HTTPFailure``, ``HTTPTransportFailure``). Swift task cancellation cancels the
///   in-flight URLSession task and surfaces as `cancelled`; a timeout is `transient`.
/// - **Redaction**: no credential appears in a description, log line or error.
///
/// ```swift
/// let client = HTTPClient(configuration: .init(maximumConnectionsPerHost: 32))
/// var request = HTTPRequest(.get, url, accepts: .successfulAnd([404]))
/// request.headers.set("Authorization", secret: token)
/// let response = try await client.send(request)
/// if response.status == 404 { return nil }
/// ```
///
/// Redirects are never followed: a 3xx is returned or mapped like any other status, because
/// FoundationNetworking would re-send the credentials to the new host and drop an upload's
/// body. Cookies are never stored and nothing is cached. Attempts go through an
/// ``HTTPTransport``: ``URLSessionTransport`` unless another is given.
public final class HTTPClient: Sendable {
    /// The configuration the client was created with.
    public let configuration: Configuration
    /// What sends each attempt.
    public let transport: any HTTPTransport

    /// Creates a client over `transport`; without one, over the shared transport of
    /// `resources` (``Configuration/transport`` `.automatic`), or over a private transport of
    /// the kind the configuration names.
    ///
    /// The shared transport is one thread and one connection pool for every client of a
    /// process (or of the ``BuckiaCore/SharedResources`` an application passes), made on first
    /// use; ``SharedResources/shutdown()`` ends it. A private transport (`.libcurl`,
    /// `.urlSession`) lives as long as its client: for comparisons and tests.
    public init(configuration: Configuration = Configuration(), transport: (any HTTPTransport)? = nil, resources: SharedResources = .process) {
        self.configuration = configuration
        if let transport {
            self.transport = transport
        } else if configuration.transport == .automatic {
            do {
                self.transport = try resources.resource(SharedHTTPTransport.self)
            } catch {
                self.transport = UnavailableTransport(failure: BuckiaError.wrapping(error, operation: "start the shared HTTP transport"))
            }
        } else {
            self.transport = HTTPClient.makeTransport(configuration.transport, configuration)
        }
    }

    /// A private transport of `kind`. Never a silent switch to another kind: a libcurl that
    /// cannot start gives a transport whose every request fails with why.
    static func makeTransport(_ kind: TransportKind, _ configuration: Configuration) -> any HTTPTransport {
        #if canImport(CCurl)
        if kind != .urlSession {
            do {
                return try CurlTransport(
                    maximumConnectionsPerHost: configuration.maximumConnectionsPerHost, timeout: configuration.timeout,
                    connectTimeout: configuration.connectTimeout, userAgent: configuration.userAgent, caFile: configuration.caFile)
            } catch {
                return UnavailableTransport(failure: BuckiaError.wrapping(error, operation: "start libcurl"))
            }
        }
        #else
        if kind == .libcurl {
            return UnavailableTransport(
                failure: BuckiaError(.unsupported, "this build of Buckia has no libcurl (Apple platforms and the portable build carry HTTP over URLSession)", operation: "start libcurl"))
        }
        #endif
        return URLSessionTransport(
            maximumConnectionsPerHost: configuration.maximumConnectionsPerHost, timeout: configuration.timeout,
            userAgent: configuration.userAgent)
    }

    /// Sends a request and returns the response with its body in memory.
    ///
    /// Use it for requests whose responses are small (metadata, listings, error documents);
    /// download large bodies with ``download(_:to:)``.
    ///
    /// - Returns: The final response, whose status ``HTTPRequest/accepts`` accepted.
    /// - Throws: ``BuckiaCore/BuckiaError``: mapped from the final status (cause
    ///   ``HTTPFailure``) or the transport failure (cause ``HTTPTransportFailure``);
    ///   `cancelled` when the task is cancelled; `notFound` when a file body does not exist.
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await perform(destination: nil, interpret: { $0 }) { _ in request }
    }

    /// Sends a request built afresh for every attempt, and interprets each accepted response.
    ///
    /// `makeRequest` runs before each attempt, so a retry carries a new signature (and date),
    /// a new upload URL, or a renewed authorization: whatever the attempt's
    /// ``HTTPAttempt/previousError`` calls for. `interpret` runs on each accepted response and
    /// may throw: a retryable ``BuckiaCore/BuckiaError`` from it (S3's `<Error>` inside a 200)
    /// retries like a failed status.
    ///
    /// Whether to retry is decided after the provider's ``Configuration/mapFailure``: a
    /// failure is retried when its mapped error ``BuckiaCore/BuckiaError/isRetryable`` (a
    /// mapping a provider supplies is trusted; the default mapping retries only
    /// ``RetryPolicy/retryableStatuses``), while attempts remain.
    public func send<T: Sendable>(
        interpret: @escaping @Sendable (HTTPResponse) throws -> T,
        _ makeRequest: @escaping @Sendable (HTTPAttempt) async throws -> HTTPRequest
    ) async throws -> T {
        try await perform(destination: nil, interpret: interpret, makeRequest)
    }

    /// Sends a request and streams a 2xx response body into `destination`, with memory
    /// bounded whatever the body's size.
    ///
    /// The body is written to a temporary file and renamed over `destination` only when the
    /// status is 2xx (copied atomically when the two are on different file systems); any
    /// other status leaves `destination` untouched. A non-2xx status that the request accepts
    /// returns a response whose body is the start of the error body as ``HTTPResponse/Body/data(_:)``.
    ///
    /// - Parameters:
    ///   - request: The request; its body may be `none` or `data`, not `file`.
    ///   - destination: Where the body goes; its directory must exist.
    /// - Returns: The final response; its body is ``HTTPResponse/Body/file(_:)`` for a 2xx.
    /// - Throws: As ``send(_:)``, plus local file errors from moving the body into place.
    public func download(_ request: HTTPRequest, to destination: URL) async throws -> HTTPResponse {
        try await download(to: destination) { _ in request }
    }

    /// Downloads with a request built afresh for every attempt (see ``send(interpret:_:)``).
    public func download(
        to destination: URL, _ makeRequest: @escaping @Sendable (HTTPAttempt) async throws -> HTTPRequest
    ) async throws -> HTTPResponse {
        try await perform(destination: destination, interpret: { $0 }) { attempt in
            let request = try await makeRequest(attempt)
            switch request.body {
            case .file, .fileRange:
                throw BuckiaError(.unsupported, "A download cannot send a file body: \(request.summary(self.configuration.redaction)).", operation: "download")
            case .none, .data: return request
            }
        }
    }

    /// Sends a request built afresh for every attempt and returns as soon as a 2xx body
    /// starts, with the body in ``HTTPResponse/bodyStream`` to read at the reader's pace.
    ///
    /// Attempts are retried as for ``send(interpret:_:)`` until the status is final; once a
    /// body is streaming, a failure ends the stream with a ``BuckiaCore/BuckiaError`` (a
    /// dropped connection `transient`, a failed ``HTTPRequest/bodyCheck`` `checksumMismatch`)
    /// and is not retried, since the bytes before it were handed out. A caller that can resume
    /// (a ranged GET of the rest) does so itself.
    public func stream(_ makeRequest: @escaping @Sendable (HTTPAttempt) async throws -> HTTPRequest) async throws -> HTTPResponse {
        try await perform(destination: nil, streaming: true, interpret: { $0 }, makeRequest)
    }

    /// Hands a redacted line to the configured log hook, building it only when there is one.
    func log(_ line: @autoclosure () -> String) {
        configuration.log?(line())
    }
}

/// The transport every client of a ``BuckiaCore/SharedResources`` shares unless it is given
/// its own: libcurl on Linux, URLSession where libcurl is not built in.
///
/// Supply another before the first provider is built to change it for all of them:
///
/// ```swift
/// let resources = SharedResources()
/// try resources.provide(SharedHTTPTransport.self, URLSessionTransport())
/// ```
public enum SharedHTTPTransport: SharedResourceKey {
    /// How many connections one host may have open at once across every client that shares
    /// the transport (each provider bounds its own concurrency below this).
    public static let maximumConnectionsPerHost = 64

    public static func makeResource() throws -> any HTTPTransport {
        #if canImport(CCurl)
        return try CurlTransport(maximumConnectionsPerHost: maximumConnectionsPerHost)
        #else
        return URLSessionTransport(maximumConnectionsPerHost: maximumConnectionsPerHost)
        #endif
    }
}

/// The transport of a client whose chosen transport could not start: every request fails with
/// the reason, at once and without retries.
struct UnavailableTransport: HTTPTransport {
    let failure: BuckiaError

    func perform(_ request: HTTPRequest, destination: URL?, errorBodyLimit: Int) async throws -> HTTPTransportResult {
        throw BuckiaError(
            .io,
            "The HTTP transport could not start (\(failure.message)); no request was sent. Choose HTTPClient.Configuration.transport = .urlSession to use URLSession instead.",
            operation: failure.operation, cause: failure)
    }
}
