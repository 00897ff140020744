import BuckiaCore
import BuckiaSecurity
import BuckiaSigV4
import Foundation

/// An S3 error answer: the code, the message and the status.
struct S3Failure: Error {
    var code: String
    var message: String
    var status: Int

    init(_ code: String, _ message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status ?? S3Failure.defaultStatus(code)
    }

    /// S3's answer (`NotImplemented`, 501) for a feature the gateway does not offer: a client learns it at once instead of getting a wrong success.
    static func unsupportedFeature(_ what: String) -> S3Failure {
        S3Failure("NotImplemented", "A header or subresource you provided implies functionality that is not implemented: \(what).", status: 501)
    }

    static func defaultStatus(_ code: String) -> Int {
        switch code {
        case "AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId", "RequestTimeTooSkewed": 403
        case "NoSuchKey", "NoSuchBucket", "NoSuchUpload": 404
        case "BucketNotEmpty", "BucketAlreadyOwnedByYou", "BucketAlreadyExists", "OperationAborted": 409
        case "PreconditionFailed": 412
        case "InvalidRange": 416
        case "NotImplemented": 501
        case "ServiceUnavailable", "SlowDown": 503
        case "InternalError": 500
        case "MethodNotAllowed": 405
        case "MissingContentLength": 411
        default: 400
        }
    }

    /// The answer for any error a handler throws: its own, or a backend's mapped to S3's codes.
    init(_ error: any Error) {
        if let failure = error as? S3Failure {
            self = failure
        } else if let refusal = error as? SigV4Refusal {
            self.init(refusal.code, refusal.message, status: refusal.status)
        } else if let refusal = error as? HTTPRefusal {
            self.init(refusal.status == 400 ? "IncompleteBody" : "InternalError", refusal.reason, status: refusal.status)
        } else if let refusal = error as? AccessRefusal {
            self.init("AccessDenied", "Access Denied: \(refusal.reason).", status: 403)
        } else {
            let wrapped = BuckiaError.wrapping(error, operation: "serve s3")
            switch wrapped.code {
            case .notFound: self.init("NoSuchKey", "The specified key does not exist.")
            case .conditionNotMatch: self.init("PreconditionFailed", "At least one of the pre-conditions you specified did not hold.")
            case .checksumMismatch: self.init("BadDigest", wrapped.message)
            case .unsupported: self.init("NotImplemented", wrapped.message, status: 501)
            case .invalidPath, .invalidConfiguration: self.init("InvalidArgument", wrapped.message)
            case .permissionDenied, .unauthorized: self.init("AccessDenied", "The gateway's backend refused: \(wrapped.message)", status: 403)
            case .rateLimited: self.init("SlowDown", "Please reduce your request rate.", status: 503)
            case .transient: self.init("ServiceUnavailable", "The gateway's backend is unavailable; try again.", status: 503)
            // No condition was sent: a folder backend cannot hold `a/b` and `a/b/c` both, and
            // says which is in the way (MinIO answers such a key with a 409 of its own too).
            case .alreadyExists: self.init("KeyConflict", wrapped.message, status: 409)
            default: self.init("InternalError", "The gateway's backend failed: \(wrapped.message)", status: 500)
            }
        }
    }

    func response(resource: String, requestId: String) -> HTTPServerResponse {
        let body =
            "<Error><Code>\(code.xmlEscaped)</Code><Message>\(message.xmlEscaped)</Message><Resource>\(S3Gateway.urlEncode(resource).xmlEscaped)</Resource><RequestId>\(requestId)</RequestId></Error>"
        return S3Gateway.xml(body, status: status)
    }
}
