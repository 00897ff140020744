import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request that failed below HTTP (no connection, timeout, TLS, a dropped connection): the
/// cause inside the ``BuckiaCore/BuckiaError`` that ``HTTPClient`` throws.
///
/// It replaces the `URLError`, whose description and `userInfo` carry the full failing URL —
/// signature and token included. Only the error code, the method and the redacted URL are
/// kept; the reason is a fixed phrase per code, never text from the URL loading system.
public struct HTTPTransportFailure: Error, Sendable, CustomStringConvertible {
    /// The request method.
    public var method: String
    /// The request URL, redacted.
    public var url: String
    /// The `URLError` code's raw value (`NSURLError*`).
    public var rawCode: Int
    /// How many attempts were made, retries included.
    public var attempts: Int

    /// Creates a failure from a `URLError` code.
    public init(method: String, url: String, code: URLError.Code, attempts: Int = 1) {
        self.method = method
        self.url = url
        self.rawCode = code.rawValue
        self.attempts = attempts
    }

    /// The `URLError` code.
    public var code: URLError.Code { URLError.Code(rawValue: rawCode) ?? .unknown }

    /// What went wrong, as a phrase ("timed out", "could not connect to the host").
    public var reason: String { Self.reason(for: code) }

    /// Method, redacted URL, reason, `URLError` code and attempts, on one line.
    public var description: String {
        let tries = attempts == 1 ? "1 attempt" : "\(attempts) attempts"
        return "\(method) \(url) \(reason) (URLError \(rawCode)) after \(tries)"
    }

    /// The `URLError` codes that mean the network or the server was momentarily unavailable,
    /// so the same request may succeed later.
    ///
    /// `secureConnectionFailed` is included: libcurl reports a TLS handshake cut short by a
    /// reset (common under load) with it, while certificate problems have their own codes
    /// (`serverCertificate*`, `clientCertificate*`) that are not retried. `badServerResponse`
    /// is included because a connection closed before any response arrives — a server
    /// dropping an idle keep-alive connection — surfaces as it. `unknown` is included because
    /// FoundationNetworking reports a body cut short (the connection closed before
    /// `Content-Length` bytes arrived, libcurl's "partial file") with it and nothing else.
    public static let transientCodes: Set<URLError.Code> = [
        .unknown, .timedOut, .networkConnectionLost, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
        .notConnectedToInternet, .secureConnectionFailed, .badServerResponse, .cannotLoadFromNetwork,
        .internationalRoamingOff, .callIsActive, .dataNotAllowed,
    ]

    /// The phrase for a `URLError` code.
    public static func reason(for code: URLError.Code) -> String {
        switch code {
        case .timedOut: "timed out: no bytes moved within the request timeout"
        case .networkConnectionLost: "lost its connection"
        case .cannotConnectToHost: "could not connect to the host"
        case .cannotFindHost: "could not resolve the host name"
        case .dnsLookupFailed: "failed its DNS lookup"
        case .notConnectedToInternet: "found no network connection"
        case .secureConnectionFailed: "failed its TLS handshake"
        case .badServerResponse: "got no valid response from the server"
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
            .serverCertificateHasUnknownRoot:
            "was refused: the server's TLS certificate is not trusted"
        case .clientCertificateRejected, .clientCertificateRequired: "was refused: a client certificate is required or was rejected"
        case .badURL: "has a malformed URL"
        case .unknown: "broke off: the connection closed before the response was complete"
        case .unsupportedURL: "has an unsupported URL (only http and https are)"
        case .httpTooManyRedirects: "was redirected too many times"
        case .userAuthenticationRequired, .userCancelledAuthentication: "needs authentication the client could not give"
        case .fileDoesNotExist: "could not read its body: the file does not exist"
        case .noPermissionsToReadFile: "could not read its body: permission denied"
        case .cannotCreateFile, .cannotOpenFile, .cannotWriteToFile, .cannotMoveFile, .cannotRemoveFile:
            "could not write the downloaded file"
        case .cancelled: "was cancelled"
        case .dataLengthExceedsMaximum: "received more data than allowed"
        case .cannotDecodeContentData, .cannotDecodeRawData, .cannotParseResponse: "received a response that could not be decoded"
        default: "failed"
        }
    }
}
