import BuckiaCore
import Foundation

extension HTTPClient {
    /// How an ``HTTPClient`` connects, waits, retries, redacts and reports.
    ///
    /// One configuration serves one provider instance; the values are fixed when the client
    /// is created. The transport may be shared with other clients, so the timeouts, CA file and
    /// `User-Agent` are applied to each request rather than to the transport.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration(maximumConnectionsPerHost: 32)
    /// configuration.log = { line in print(line) }   // lines are already redacted
    /// let client = HTTPClient(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// How many connections a private transport (``transport`` `.libcurl` or
        /// `.urlSession`) may open to one host at once; URLSession's default of 6 throttles
        /// parallel transfers. The shared transport allows
        /// ``SharedHTTPTransport/maximumConnectionsPerHost`` to all its clients together.
        public var maximumConnectionsPerHost: Int
        /// How long a request may go without moving a byte before it fails with
        /// ``BuckiaCore/BuckiaError/Code/transient``; ``HTTPRequest/timeout`` overrides it per
        /// request. FoundationNetworking counts whole seconds; the value is rounded up.
        public var timeout: Duration
        /// When to retry; ``HTTPRequest/retryPolicy`` overrides it per request.
        public var retryPolicy: RetryPolicy
        /// Which header fields, query parameters and body elements are credentials.
        public var redaction: HTTPRedaction
        /// How many bytes of an error response body are kept for the error (64 KiB): enough
        /// for any error document, bounded however large the body.
        public var errorBodyLimit: Int
        /// The `User-Agent` sent unless a request sets its own.
        public var userAgent: String
        /// Receives one redacted line per event: each attempt's start, each retry with its
        /// delay and reason, and the final status or failure. Never receives a credential.
        /// Called on the requesting task; keep it fast.
        public var log: (@Sendable (String) -> Void)?
        /// Which transport a client uses when none is given: the shared one (`.automatic`) or a
        /// private one of its own.
        public var transport: TransportKind
        /// How long connecting (TCP and TLS) may take (libcurl transport).
        public var connectTimeout: Duration
        /// A PEM file of certificate authorities to trust instead of the system's (libcurl
        /// transport).
        public var caFile: String?
        /// Maps a failed status to the error to throw, before the default mapping
        /// (``HTTPFailure/buckiaError()``); return nil to use the default. Providers read
        /// ``HTTPFailure/body`` here to turn their error codes into the right
        /// ``BuckiaCore/BuckiaError/Code``; keep the failure as the error's cause.
        public var mapFailure: (@Sendable (HTTPFailure) -> BuckiaError?)?

        /// Creates a configuration.
        public init(
            maximumConnectionsPerHost: Int = 16,
            timeout: Duration = .seconds(60),
            retryPolicy: RetryPolicy = .standard,
            redaction: HTTPRedaction = .default,
            errorBodyLimit: Int = 64 * 1024,
            userAgent: String = BuckiaVersion.userAgent(),
            log: (@Sendable (String) -> Void)? = nil,
            mapFailure: (@Sendable (HTTPFailure) -> BuckiaError?)? = nil,
            transport: TransportKind = .automatic,
            connectTimeout: Duration = .seconds(10),
            caFile: String? = nil
        ) {
            self.transport = transport
            self.connectTimeout = connectTimeout
            self.caFile = caFile
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.timeout = timeout
            self.retryPolicy = retryPolicy
            self.redaction = redaction
            self.errorBodyLimit = errorBodyLimit
            self.userAgent = userAgent
            self.log = log
            self.mapFailure = mapFailure
        }
    }
}

extension HTTPClient {
    /// The transports a client can make for itself.
    public enum TransportKind: String, Sendable, CaseIterable {
        /// The transport shared through ``BuckiaCore/SharedResources`` (``SharedHTTPTransport``:
        /// libcurl on Linux, URLSession on Apple platforms).
        case automatic
        /// A private ``CurlTransport`` (Linux).
        case libcurl
        /// A private ``URLSessionTransport``.
        case urlSession

        /// The private kinds this build can make, libcurl first: `.libcurl` where Buckia links
        /// libcurl (Linux), `.urlSession` everywhere. On Apple platforms and in the portable
        /// build (Docs/Platforms.md) a client asking for `.libcurl` gets a transport whose every
        /// request fails, saying so, never a silent switch to URLSession.
        public static var privateKinds: [TransportKind] {
            #if canImport(CCurl)
            [.libcurl, .urlSession]
            #else
            [.urlSession]
            #endif
        }
    }
}

extension Duration {
    /// The duration as a `TimeInterval` rounded up to whole seconds, at least one:
    /// FoundationNetworking truncates `timeoutInterval` to whole seconds, and zero would
    /// disable the timeout.
    var wholeSecondsForTimeout: TimeInterval {
        let (seconds, attoseconds) = components
        let whole = seconds + (attoseconds > 0 ? 1 : 0)
        return TimeInterval(max(1, whole))
    }
}
