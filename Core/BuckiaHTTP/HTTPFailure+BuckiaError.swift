import BuckiaCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPFailure {
    /// The default mapping from an HTTP status to a ``BuckiaCore/BuckiaError``, with this
    /// failure as its cause.
    ///
    /// | Status | Code |
    /// |---|---|
    /// | 401 | `unauthorized` |
    /// | 403 | `permissionDenied` |
    /// | 404, 410 | `notFound` |
    /// | 304, 409, 412 | `conditionNotMatch` |
    /// | 429 | `rateLimited` (with `retryAfter`) |
    /// | 408, 5xx except 501 and 505 | `transient` |
    /// | 405, 501, 505 | `unsupported` |
    /// | 414 | `invalidPath` |
    /// | other 3xx | `invalidConfiguration` (redirects are not followed: wrong endpoint or region) |
    /// | 400, other 4xx | `invalidConfiguration` (the request was malformed for this backend) |
    /// | anything else | `io` |
    ///
    /// Providers refine this from the body (S3's `SlowDown` on 503 is already `transient`, but
    /// `ExpiredToken` on 400 is `unauthorized`, `BadDigest` is `checksumMismatch`) through
    /// ``HTTPClient/Configuration/mapFailure``.
    public func buckiaError() -> BuckiaError {
        let request = "\(method) \(url)"
        let (code, message): (BuckiaError.Code, String) =
            switch status {
            case 401:
                (.unauthorized, "The server rejected the credentials for \(request) (HTTP 401); check the key and secret, or refresh the token.")
            case 403:
                (.permissionDenied, "Permission denied for \(request) (HTTP 403); the credentials do not allow this operation.")
            case 404, 410:
                (.notFound, "Nothing exists at \(request) (HTTP \(status)).")
            case 304, 409, 412:
                (.conditionNotMatch, "A precondition did not hold for \(request) (HTTP \(status)); the object changed or already exists.")
            case 429:
                (.rateLimited, "The server is limiting the request rate for \(request) (HTTP 429)\(retryAdvice).")
            case 405, 501, 505:
                (.unsupported, "The server does not support \(request) (HTTP \(status)).")
            case 414:
                (.invalidPath, "The URL of \(request) is too long for the server (HTTP 414); use a shorter key.")
            case 408, 500...599:
                (.transient, "The server failed temporarily on \(request) (HTTP \(status)) after \(attemptsText)\(retryAdvice).")
            case 300...399:
                (.invalidConfiguration, "The server redirected \(request) (HTTP \(status)) to \(location); redirects are not followed, so check the endpoint or region.")
            case 400...499:
                (.invalidConfiguration, "The server rejected \(request) as invalid (HTTP \(status)); check the configuration and the request.")
            default:
                (.io, "Unexpected HTTP \(status) for \(request).")
            }
        return BuckiaError(code, message, cause: self, retryAfter: retryAfter)
    }

    private var attemptsText: String { attempts == 1 ? "1 attempt" : "\(attempts) attempts" }

    private var retryAdvice: String {
        if let retryAfter { return "; retry after \(retryAfter.secondsText)" }
        return "; retry later"
    }

    private var location: String {
        headers["Location"].map { HTTPRedaction.default.redact(urlString: $0) } ?? "an unnamed location"
    }
}

extension HTTPTransportFailure {
    /// The mapping from a transport failure to a ``BuckiaCore/BuckiaError``, with this failure
    /// (never the `URLError`, whose text holds the unredacted URL) as its cause.
    ///
    /// `cancelled` → `cancelled`; the ``transientCodes`` and a reply that is not HTTP → `transient`; certificate and URL
    /// problems → `invalidConfiguration`; a missing or unreadable upload file → `notFound` /
    /// `permissionDenied`; anything else → `io`.
    public func buckiaError() -> BuckiaError {
        let request = "\(method) \(url)"
        let (code, message): (BuckiaError.Code, String) =
            switch self.code {
            case .cancelled:
                (.cancelled, "\(request) was cancelled.")
            case .timedOut:
                (.transient, "\(request) timed out: no bytes moved within the request timeout (\(attemptsText)); the server may be overloaded or unreachable.")
            case .cannotParseResponse,
                .unsupportedURL where url.hasPrefix("http://") || url.hasPrefix("https://"):
                // The URL is HTTP, so what libcurl could not handle was the reply. From a server
                // that answered HTTP a moment ago that is a fault on the way (a middlebox, a
                // connection crossed), so it is retried; from a wrong endpoint it persists.
                (.transient, "\(request) got a reply that is not HTTP (\(attemptsText)); if it persists, check that the endpoint's host and port are those of an HTTP server.")
            case let code where Self.transientCodes.contains(code):
                (.transient, "\(request) \(reason) (\(attemptsText)); check the network and retry.")
            case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
                .serverCertificateHasUnknownRoot, .clientCertificateRejected, .clientCertificateRequired, .badURL,
                .unsupportedURL, .httpTooManyRedirects:
                (.invalidConfiguration, "\(request) \(reason); check the endpoint configuration.")
            case .fileDoesNotExist:
                (.notFound, "\(request) \(reason).")
            case .noPermissionsToReadFile:
                (.permissionDenied, "\(request) \(reason).")
            default:
                (.io, "\(request) \(reason) (URLError \(rawCode)).")
            }
        return BuckiaError(code, message, cause: self)
    }

    private var attemptsText: String { attempts == 1 ? "1 attempt" : "\(attempts) attempts" }
}
