import BuckiaCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one attempt of a request produced: a status, its headers, and the body (in memory,
/// the start of an error body, or the file a 2xx download was moved to).
public struct HTTPTransportResult: Sendable {
    /// The response status.
    public var status: Int
    /// The response headers.
    public var headers: HTTPHeaders
    /// The body as the transport delivered it.
    public var body: HTTPResponse.Body
    /// Whether an in-memory error body was cut at the transport's limit.
    public var isBodyTruncated: Bool
    /// The digests computed over a 2xx body for the request's ``HTTPRequest/bodyCheck``.
    public var bodyDigests: [HashAlgorithm: Digest]
    /// A 2xx body still arriving, from ``HTTPTransport/stream(_:errorBodyLimit:)``: it ends
    /// with ``HTTPTransportError`` or ``HTTPBodyMismatch`` when the transfer fails or the body
    /// check does (the digests are then not in ``bodyDigests``).
    public var bodyStream: ByteStream?

    /// Creates a result.
    public init(
        status: Int, headers: HTTPHeaders, body: HTTPResponse.Body, isBodyTruncated: Bool = false, bodyDigests: [HashAlgorithm: Digest] = [:],
        bodyStream: ByteStream? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.isBodyTruncated = isBodyTruncated
        self.bodyDigests = bodyDigests
        self.bodyStream = bodyStream
    }
}

/// A failure to get any HTTP response, reduced to a `URLError` code (the vocabulary every
/// transport maps its own failures to); the request's URL is not kept, since it can carry a
/// signature.
public struct HTTPTransportError: Error, Sendable {
    /// What went wrong.
    public var code: URLError.Code

    /// Creates a transport error.
    public init(code: URLError.Code) { self.code = code }
}

/// Sends one attempt of one request: the seam between ``HTTPClient`` (retries, error mapping,
/// redaction, logging) and the code that moves bytes.
///
/// ## Implementation requirements
///
/// - Send exactly the request given: no retries, no redirects followed, no cookies, no
///   caching, no content decoding (`Accept-Encoding: identity` unless the request says otherwise).
/// - Stream a ``HTTPRequest/Body/file(_:)`` body from disk with a `Content-Length`, never
///   chunked, reading it from the start on every attempt.
/// - With a destination, write a 2xx body to a file and move it over the destination only
///   when complete; for any other status return at most `errorBodyLimit` bytes of the body
///   in memory and leave the destination alone.
/// - With a ``HTTPRequest/bodyCheck``, hash a 2xx body (not a HEAD's) as it arrives and throw
///   ``HTTPBodyMismatch`` instead of delivering it when it differs — before it is moved over
///   the destination; report the digests in ``HTTPTransportResult/bodyDigests``.
/// - Throw ``HTTPTransportError`` when no response arrives (timeouts, refused or dropped
///   connections, cancellation as `.cancelled`), ``BuckiaCore/BuckiaError`` for local file
///   failures. Never trap on what a server sends.
public protocol HTTPTransport: Sendable {
    /// Performs one attempt.
    ///
    /// - Parameters:
    ///   - request: The request, fully built for this attempt.
    ///   - destination: Where a 2xx body goes, or nil to return it in memory.
    ///   - errorBodyLimit: How many bytes of a non-2xx body a download keeps.
    func perform(_ request: HTTPRequest, destination: URL?, errorBodyLimit: Int) async throws -> HTTPTransportResult

    /// Performs one attempt and returns as soon as a 2xx response's body starts, with the body
    /// as ``HTTPTransportResult/bodyStream``; any other status comes back as from
    /// ``perform(_:destination:errorBodyLimit:)`` without a destination, its body cut at
    /// `errorBodyLimit`.
    ///
    /// The reader sets the pace: a transport buffers a bounded amount and then stops reading
    /// from the server. The default downloads the body to a temporary file first and streams
    /// the file (bounded memory, but nothing arrives before everything has).
    func stream(_ request: HTTPRequest, errorBodyLimit: Int) async throws -> HTTPTransportResult
}

extension HTTPTransport {
    public func stream(_ request: HTTPRequest, errorBodyLimit: Int) async throws -> HTTPTransportResult {
        let url = TemporaryFile.makeURL()
        var result: HTTPTransportResult
        do {
            result = try await perform(request, destination: url, errorBodyLimit: errorBodyLimit)
        } catch {
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
            throw error
        }
        if case .file(let file) = result.body {
            result.bodyStream = try ByteStream.file(file, removingWhenDone: true)
            result.body = .data(Data())
        }
        return result
    }
}

/// What a request builder knows about the attempt it builds: its number, and why the previous
/// one failed, so a provider can sign afresh, fetch a new upload URL, or re-authorize.
public struct HTTPAttempt: Sendable {
    /// 1 for the first attempt.
    public var number: Int
    /// The error that ended the previous attempt, mapped by the provider; nil on the first.
    public var previousError: BuckiaError?

    /// Describes an attempt.
    public init(number: Int, previousError: BuckiaError?) {
        self.number = number
        self.previousError = previousError
    }
}
