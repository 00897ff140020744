import BuckiaCore
import BuckiaSigV4
import BuckiaHTTP
import Foundation

/// Turns S3's error responses into ``BuckiaCore/BuckiaError`` codes by their XML `Code`.
enum S3ErrorMapping {
    /// The error for a failed request, or nil to use the HTTP client's status mapping.
    static func map(_ failure: HTTPFailure) -> BuckiaError? {
        guard !failure.body.isEmpty, let root = try? XMLNode.parse(failure.body, what: "error"), root.name == "Error" else {
            return nil
        }
        let code = root.value("Code") ?? "Unknown"
        let message = root.value("Message").map { ": \($0.escapingControlCharacters.withoutTerminalPeriod)" } ?? ""
        let key = root.value("Key")
        let buckiaCode: BuckiaError.Code
        let advice: String
        switch code {
        case "NoSuchKey", "NoSuchBucket", "NoSuchUpload":
            buckiaCode = .notFound
            advice = code == "NoSuchBucket" ? "Check the bucket name and region." : ""
        case "AccessDenied", "AllAccessDisabled", "AccountProblem":
            buckiaCode = .permissionDenied
            advice = "The credentials are valid but not allowed to do this; check the bucket policy and IAM permissions."
        case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired", "RequestTimeTooSkewed":
            buckiaCode = .unauthorized
            advice = code == "RequestTimeTooSkewed"
                ? "The clock here is too far from the server's; fix the system time."
                : "Check the access key id and secret access key (and session token, if any)."
        case "SlowDown", "RequestLimitExceeded", "TooManyRequests":
            buckiaCode = .rateLimited
            advice = "Reduce maxConcurrentOperations or retry later."
        case "PreconditionFailed", "ConditionalRequestConflict", "OperationAborted":
            buckiaCode = .conditionNotMatch
            advice = ""
        case "BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch", "InvalidChecksum":
            buckiaCode = .checksumMismatch
            advice = "The bytes changed on the way; retry the upload."
        case "InternalError", "ServiceUnavailable", "RequestTimeout":
            buckiaCode = .transient
            advice = "Retry later."
        case "KeyTooLongError", "InvalidObjectName":
            buckiaCode = .invalidPath
            advice = ""
        case "NotImplemented":
            buckiaCode = .unsupported
            advice = "This S3-compatible server does not implement the operation."
        case "BucketAlreadyExists", "BucketAlreadyOwnedByYou":
            buckiaCode = .alreadyExists
            advice = ""
        default:
            buckiaCode = failure.status >= 500 ? .transient : .invalidConfiguration
            advice = ""
        }
        // The code is the server's text too: escaped like the message, for both reach a terminal.
        let sentence = "S3 refused the \(failure.method) request with \(code.escapingControlCharacters)\(message)." + (advice.isEmpty ? "" : " \(advice)")
        return BuckiaError(buckiaCode, sentence, path: key, cause: failure, retryAfter: failure.retryAfter)
    }
}

extension S3Provider {
    /// The error the provider's HTTP client throws for a failed request with this status and
    /// body: S3's reading of its XML error document, or the client's mapping by status when the
    /// body is none. The fuzz target `s3-xml` reads each input through this as well as the parser.
    package static func error(status: Int, method: String, body: Data) -> BuckiaError {
        let failure = HTTPFailure(method: method, url: "https://s3.amazonaws.com/", status: status, body: body)
        return S3ErrorMapping.map(failure) ?? failure.buckiaError()
    }
}
