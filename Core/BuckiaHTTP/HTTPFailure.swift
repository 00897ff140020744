import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The raw facts of a request that ended in an HTTP status nobody accepted: the cause inside
/// the ``BuckiaCore/BuckiaError`` that ``HTTPClient`` throws.
///
/// Providers read it to refine the mapping from the error body (S3's `<Code>`, B2's JSON
/// `code`): catch the `BuckiaError`, cast its `cause` to `HTTPFailure`, or install
/// ``HTTPClient/Configuration/mapFailure``. Everything here is already redacted: the URL has no
/// signature, and ``body`` has sensitive elements (`SignatureProvided`, `StringToSign`, …) and
/// any echo of the request's credentials replaced by `<REDACTED>`, so the error can be logged.
public struct HTTPFailure: Error, Sendable, CustomStringConvertible {
    /// The request method.
    public var method: String
    /// The request URL, redacted.
    public var url: String
    /// The final HTTP status.
    public var status: Int
    /// The response header fields (credential fields such as `Set-Cookie` print redacted).
    public var headers: HTTPHeaders
    /// The start of the response body (at most ``HTTPClient/Configuration/errorBodyLimit``
    /// bytes), redacted.
    public var body: Data
    /// Whether the body was longer than ``body``.
    public var isBodyTruncated: Bool
    /// The wait the server asked for in `Retry-After`, when it sent one.
    public var retryAfter: Duration?
    /// How many attempts were made, retries included.
    public var attempts: Int

    /// Creates a failure; ``HTTPClient`` builds these, tests and provider doubles may too.
    public init(
        method: String, url: String, status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(),
        isBodyTruncated: Bool = false, retryAfter: Duration? = nil, attempts: Int = 1
    ) {
        self.method = method
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body
        self.isBodyTruncated = isBodyTruncated
        self.retryAfter = retryAfter
        self.attempts = attempts
    }

    /// The body as text (invalid UTF-8 replaced), for parsing error documents.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The standard reason phrase for the status, such as `not found`.
    public var reasonPhrase: String { HTTPURLResponse.localizedString(forStatusCode: status) }

    /// The first characters of the body on one line, for messages: line breaks and tabs made
    /// spaces, and any other control character escaped (`\e`, `\x07`), for the body is the
    /// server's text and this reaches a terminal in an error's description.
    public var bodyExcerpt: String {
        let limit = 300
        let flat = bodyText.map { $0.isNewline || $0 == "\t" ? " " : $0 }
        let text = String(flat.prefix(limit)).trimmingCharacters(in: .whitespaces).escapingControlCharacters
        return flat.count > limit || isBodyTruncated ? text + "…" : text
    }

    /// Status, method, redacted URL, attempts and the start of the redacted body, on one line.
    public var description: String {
        let tries = attempts == 1 ? "1 attempt" : "\(attempts) attempts"
        var text = "HTTP \(status) (\(reasonPhrase)) for \(method) \(url) after \(tries)"
        if let retryAfter { text += ", Retry-After \(retryAfter.secondsText)" }
        let excerpt = bodyExcerpt
        if !excerpt.isEmpty { text += ": \(excerpt)" }
        return text
    }
}

extension Duration {
    /// Seconds with up to three decimals, as messages and log lines show delays.
    var secondsText: String {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000)s" }
        return String(format: "%.3fs", Double(milliseconds) / 1000)
    }
}
