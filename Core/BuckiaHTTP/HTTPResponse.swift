import BuckiaCore
import Foundation

/// A final HTTP response: status, header fields, and the body in memory or in a file.
///
/// Header lookups ignore case (`response.headers["etag"]` finds `ETag`). `description` is safe
/// to log: it shows the status, the redacted URL and redacted header fields, never the body.
public struct HTTPResponse: Sendable, CustomStringConvertible {
    /// Where the response body is.
    public enum Body: Sendable, Hashable {
        /// The body bytes, from ``HTTPClient/send(_:)``, or the first bytes of a non-2xx body
        /// that a download accepted (see ``HTTPClient/download(_:to:)``).
        case data(Data)
        /// The file a download moved the body to.
        case file(URL)
    }

    /// The HTTP status code.
    public var status: Int
    /// The response header fields.
    public var headers: HTTPHeaders
    /// The body.
    public var body: Body
    /// The URL that answered, redacted, for messages. Redacted when first read, since most
    /// responses never need it.
    public var redactedURL: String {
        get {
            switch url {
            case .redacted(let text): text
            case .pending(let url, let redaction): redaction.redact(url)
            }
        }
        set { url = .redacted(newValue) }
    }
    private var url: URLText

    private enum URLText: Sendable {
        case redacted(String)
        case pending(URL, HTTPRedaction)
    }
    /// How many attempts it took, retries included.
    public var attempts: Int
    /// The digests the transport computed over the body for the request's
    /// ``HTTPRequest/bodyCheck`` (already verified), so the caller need not read it again.
    public var bodyDigests: [HashAlgorithm: Digest] = [:]
    /// The body as it arrives, for a response from ``HTTPClient/stream(_:)`` with a 2xx status
    /// (``body`` is then empty). Its errors are ``BuckiaCore/BuckiaError``s.
    public var bodyStream: ByteStream?

    /// Creates a response (mostly for tests and provider doubles).
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Body = .data(Data()), redactedURL: String = "", attempts: Int = 1) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = .redacted(redactedURL)
        self.attempts = attempts
    }

    /// A response for `url`, redacted by `redaction` only if a message needs it.
    init(status: Int, headers: HTTPHeaders, body: Body, url: URL, redaction: HTTPRedaction, attempts: Int) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = .pending(url, redaction)
        self.attempts = attempts
    }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200...299).contains(status) }

    /// The body bytes when the body is in memory; empty for a file body.
    public var data: Data {
        if case .data(let data) = body { return data }
        return Data()
    }

    /// The file holding the body, for a download.
    public var fileURL: URL? {
        if case .file(let url) = body { return url }
        return nil
    }

    /// The value of a header field, compared case-insensitively.
    public func header(_ name: String) -> String? { headers.first(name) }

    /// The `Content-Length` the server declared, when it did.
    public var contentLength: Int64? { Self.declaredLength(headers) }

    /// The byte count a `Content-Length` field declares: digits only, within `Int64`; a list of
    /// one value repeated (`5, 5`, two fields folded into one) counts as that value. Nil when
    /// there is no such field or it is not a byte count.
    package static func declaredLength(_ headers: HTTPHeaders) -> Int64? {
        guard let text = headers["Content-Length"] else { return nil }
        let values = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard let first = values.first, !first.isEmpty, first.utf8.count <= 19, first.utf8.allSatisfy({ (48...57).contains($0) }),
              values.allSatisfy({ $0 == first }), let value = Int64(first)
        else { return nil }
        return value
    }

    /// The `ETag` without surrounding quotes, when there is one.
    public var etag: String? {
        header("ETag").map { value in
            // Trimmed by hand (Foundation's trimming showed in profiles of small uploads).
            let trimmed = value.utf8.drop { $0 == 0x22 || $0 == 0x20 }.reversed().drop { $0 == 0x22 || $0 == 0x20 }.reversed()
            return String(decoding: Array(trimmed), as: UTF8.self)
        }
    }

    /// Status, redacted URL, redacted headers and the body's kind and size; safe to log.
    public var description: String {
        let bodyText: String
        switch body {
        case .data(let data): bodyText = "\(data.count) bytes"
        case .file(let url): bodyText = "file \(url.path)"
        }
        return "HTTP \(status) from \(redactedURL) headers: \(headers) body: \(bodyText)"
    }
}
