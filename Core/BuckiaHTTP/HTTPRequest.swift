import BuckiaCore
import Foundation

/// One HTTP request as a value: what ``HTTPClient`` sends, and re-sends on a retry.
///
/// A body is held as `Data` or named by a file URL; a file body is streamed from disk with a
/// `Content-Length` (never chunked) and read again from the start on every attempt, so memory
/// stays bounded whatever the file's size. `description` is safe to log: credentials in
/// headers and query parameters print as `<REDACTED>`.
///
/// ```swift
/// var request = HTTPRequest(.put, url, body: .file(localURL))
/// request.headers.set("Authorization", secret: signature)
/// request.timeout = .seconds(30)
/// let response = try await client.send(request)
/// ```
public struct HTTPRequest: Sendable, CustomStringConvertible {
    /// An HTTP method. Open-ended: `HTTPRequest.Method("PROPFIND")` works too.
    public struct Method: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The method token as sent, such as `GET`.
        public let rawValue: String

        /// Wraps a method token; it is upper-cased, as methods are case-sensitive on the wire.
        public init(rawValue: String) { self.rawValue = rawValue.uppercased() }
        /// Wraps a method token.
        public init(_ rawValue: String) { self.init(rawValue: rawValue) }
        /// Wraps a method token written as a literal.
        public init(stringLiteral value: String) { self.init(rawValue: value) }

        /// `GET`: read an object or a listing.
        public static let get = Method("GET")
        /// `HEAD`: read an object's metadata.
        public static let head = Method("HEAD")
        /// `PUT`: write an object or a part.
        public static let put = Method("PUT")
        /// `POST`: API calls (B2), multipart control (S3).
        public static let post = Method("POST")
        /// `DELETE`: remove an object.
        public static let delete = Method("DELETE")
        /// `PATCH`: partial updates some APIs use.
        public static let patch = Method("PATCH")

        /// The method token.
        public var description: String { rawValue }
    }

    /// Where the request body comes from.
    public enum Body: Sendable, Hashable {
        /// No body.
        case none
        /// Bytes held in memory; fine for small payloads (XML, JSON, one multipart part).
        case data(Data)
        /// A local file streamed from disk with bounded memory; re-read on every attempt.
        case file(URL)
        /// Bytes `range` of a local file, read in place: one part of a multipart upload, with
        /// no copy of it anywhere. (The URLSession transport, which cannot send part of a
        /// file, copies the range to a private temporary file first.)
        case fileRange(URL, Range<Int64>)

        /// A reader of `url` once `range` is known to lie within it: what each transport
        /// checks before it sends anything of a ``fileRange(_:_:)`` body.
        ///
        /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidPath`` for a range outside the file;
        ///   what opening the file throws.
        static func rangeReader(_ url: URL, _ range: Range<Int64>) throws -> FileReader {
            let reader = try FileReader(url)
            guard range.lowerBound >= 0, range.upperBound <= (try reader.size()) else {
                throw BuckiaError(
                    .invalidPath, "Bytes \(range.lowerBound)..<\(range.upperBound) are not all in \(url.path).", operation: "upload", path: url.path)
            }
            return reader
        }
    }

    /// Which final statuses count as success instead of becoming a thrown ``BuckiaCore/BuckiaError``.
    public enum AcceptedStatuses: Sendable, Hashable {
        /// Only 2xx succeeds; anything else throws, mapped by status (the default).
        case successful
        /// 2xx and these statuses succeed, so a provider can interpret them itself (a 404 on a
        /// HEAD meaning "absent", a 412 meaning "someone else wrote first").
        case successfulAnd(Set<Int>)
        /// Every final status is returned; the caller inspects ``HTTPResponse/status``.
        /// Transient statuses are still retried first.
        case all

        /// Whether `status` is returned rather than thrown.
        public func accepts(_ status: Int) -> Bool {
            switch self {
            case .successful: (200...299).contains(status)
            case .successfulAnd(let extra): (200...299).contains(status) || extra.contains(status)
            case .all: true
            }
        }
    }

    /// The method.
    public var method: Method
    /// The full URL, query included.
    public var url: URL
    /// The header fields to send; the client adds `User-Agent` and `Accept-Encoding: identity`
    /// unless they are set here.
    public var headers: HTTPHeaders
    /// The body.
    public var body: Body
    /// How long the request may go without moving a byte before it fails as timed out; nil
    /// uses ``HTTPClient/Configuration/timeout``. FoundationNetworking counts whole seconds, so
    /// the value is rounded up to at least one second.
    public var timeout: Duration?
    /// How long connecting (TCP and TLS) may take; nil uses
    /// ``HTTPClient/Configuration/connectTimeout`` (libcurl transport).
    public var connectTimeout: Duration?
    /// A PEM file of certificate authorities to trust for this request instead of the
    /// system's; nil uses ``HTTPClient/Configuration/caFile`` (libcurl transport).
    public var caFile: String?
    /// Which final statuses are returned rather than thrown.
    public var accepts: AcceptedStatuses
    /// A retry policy for this request only (say, no retries for a non-idempotent POST); nil
    /// uses the client's.
    public var retryPolicy: RetryPolicy?
    /// Whether a `checksumMismatch` from the server may be retried. Set it when the digest
    /// header was computed here from the very body being sent: then a mismatch means bytes
    /// changed on the way, and sending again can succeed. Leave it false (the default) when
    /// the digest is the caller's claim, for then the claim is wrong and a retry cannot help.
    public var retriesDigestMismatch = false
    /// Digests a 2xx response body must have, checked as it arrives; a body that fails is
    /// refused before it reaches a download's destination, and the attempt is retried.
    public var bodyCheck: HTTPBodyCheck?
    /// The most bytes a download's 2xx body may have: a body that declares more is refused at
    /// its headers, and one that crosses it (a chunked body declares nothing) is stopped as it
    /// does, its partial file removed. Either is ``BuckiaCore/BuckiaError/Code/invalidConfiguration``,
    /// not retried. Nil: no limit. (URLSession, which writes a download where Buckia cannot
    /// count it, checks the declared length and then the finished file.)
    public var maximumBodySize: Int64?

    /// Creates a request.
    public init(
        _ method: Method, _ url: URL, headers: HTTPHeaders = HTTPHeaders(), body: Body = .none,
        timeout: Duration? = nil, accepts: AcceptedStatuses = .successful, retryPolicy: RetryPolicy? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.accepts = accepts
        self.retryPolicy = retryPolicy
    }

    /// The method and URL on one line, credentials redacted: what log lines and errors show.
    public func summary(_ redaction: HTTPRedaction = .default) -> String {
        "\(method) \(redaction.redact(url))"
    }

    /// Every credential this request carries (sensitive header values and query values), so
    /// that text coming back from the server can be scrubbed of them.
    func secrets(_ redaction: HTTPRedaction) -> [String] {
        headers.sensitiveValues(redaction) + redaction.sensitiveQueryValues(of: url)
    }

    /// Method, redacted URL, redacted headers and the body's kind and size; safe to log.
    public var description: String {
        let bodyText: String
        switch body {
        case .none: bodyText = "none"
        case .data(let data): bodyText = "\(data.count) bytes"
        case .file(let file): bodyText = "file \(file.path)"
        case .fileRange(let file, let range): bodyText = "bytes \(range.lowerBound)..<\(range.upperBound) of file \(file.path)"
        }
        return "\(summary()) headers: \(headers) body: \(bodyText)"
    }
}
