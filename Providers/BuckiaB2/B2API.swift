import BuckiaCore
import BuckiaHTTP
import Foundation

/// The JSON B2's native API answers with, as far as Buckia reads it. Unknown fields are
/// ignored and optional ones may be null, so a newer server's answers still decode.
enum B2API {
    /// b2_authorize_account, version 3: everything storage needs is under `apiInfo.storageApi`.
    struct Authorization: Decodable {
        struct APIInfo: Decodable { let storageApi: StorageAPI }
        struct StorageAPI: Decodable {
            let apiUrl: String
            let downloadUrl: String
            let recommendedPartSize: Int64?
            let absoluteMinimumPartSize: Int64?
            let bucketId: String?
            let bucketName: String?
            let namePrefix: String?
            let capabilities: [String]?
        }
        let accountId: String
        let authorizationToken: String
        let apiInfo: APIInfo
    }

    struct Bucket: Decodable {
        let bucketId: String
        let bucketName: String
        let bucketType: String?
    }

    struct Buckets: Decodable { let buckets: [Bucket] }

    /// An upload URL and the token that goes with it: one upload at a time may use them.
    struct UploadURL: Decodable {
        let uploadUrl: String
        let authorizationToken: String
    }

    /// A file version, as uploads, listings, copies and b2_get_file_info describe it.
    struct File: Decodable {
        let action: String?
        let fileId: String?
        let fileName: String
        let contentLength: Int64?
        let contentSha1: String?
        let contentType: String?
        let fileInfo: [String: String]?
        let uploadTimestamp: Int64?
    }

    struct FileNames: Decodable {
        let files: [File]
        let nextFileName: String?
    }

    struct FileVersions: Decodable {
        let files: [File]
        let nextFileName: String?
        let nextFileId: String?
    }

    struct Part: Decodable {
        let partNumber: Int
        let contentLength: Int64
        let contentSha1: String
        /// Optional in B2's answers: parts stored long ago may have none.
        let contentMd5: String?
        let uploadTimestamp: Int64?
    }

    struct Parts: Decodable {
        let parts: [Part]
        let nextPartNumber: Int?
    }

    struct UnfinishedFiles: Decodable {
        let files: [File]
        let nextFileId: String?
    }

    struct DownloadAuthorization: Decodable {
        let authorizationToken: String
    }

    /// b2_create_key's answer: the only time B2 shows the key itself.
    struct CreatedKey: Decodable {
        let applicationKeyId: String
        let applicationKey: String
        let capabilities: [String]
        let expirationTimestamp: Int64?
    }

    /// B2's error document: `{"status": 400, "code": "bad_request", "message": "..."}`.
    struct Failure: Decodable {
        let status: Int?
        let code: String
        let message: String?
    }

    /// Decodes an answer, or says which call answered what Buckia cannot read.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data, call: String) throws -> T {
        do {
            return try JSONValidation.decode(type, from: data, what: "B2's answer to \(call)")
        } catch {
            throw BuckiaError(
                .corrupt,
                "B2 answered \(call) with JSON Buckia cannot read (\(data.count) bytes\((error as? BuckiaError).map { ": \($0.message)" } ?? "")); the server may not speak B2's native API.",
                operation: call, cause: error)
        }
    }
}

/// B2's name for the file-info entry that holds the source's modification time, in
/// milliseconds since 1970 (the `b2` tool's and rclone's convention).
let modificationTimeInfo = "src_last_modified_millis"
/// The file-info entry rclone and the `b2` tool keep a large file's whole SHA-1 in (B2 itself
/// has only the parts' SHA-1s for it).
let largeFileSHA1Info = "large_file_sha1"

/// How B2 wants file names and file-info values in headers and download URLs: UTF-8,
/// percent-encoded except for unreserved characters and `/`. `+` is encoded too, for B2 reads
/// a bare `+` in a header as a space.
func b2Encode(_ text: String) -> String {
    PercentEncoding.encode(text, keepingSlash: true)
}

/// Turns B2's error documents into ``BuckiaCore/BuckiaError`` codes by their `code`.
enum B2ErrorMapping {
    /// The error for a failed request, or nil to use the HTTP client's status mapping.
    static func map(_ failure: HTTPFailure) -> BuckiaError? {
        guard let body = try? JSONValidation.decode(B2API.Failure.self, from: failure.body, what: "B2's error") else {
            // No B2 error document: a proxy's page, a dropped body, or a HEAD (which has no
            // body): a 401 there is most likely an expired authorization, renewed on retry.
            if failure.status == 401 {
                return BuckiaError(
                    .transient, "B2 refused the authorization (401 without an error document); Buckia authorizes again and retries.",
                    cause: failure)
            }
            if failure.status == 408 {
                return BuckiaError(.transient, "B2 timed out the request (408). Retry later.", cause: failure, retryAfter: failure.retryAfter)
            }
            return nil
        }
        let code = body.code
        let detail = body.message.map { ": \($0.escapingControlCharacters.withoutTrailingPeriod)" } ?? ""
        let buckiaCode: BuckiaError.Code
        var advice = ""
        switch (failure.status, code) {
        case (_, "expired_auth_token"), (_, "bad_auth_token"):
            // Retried: the next attempt authorizes again (or, for an upload, takes a new
            // upload URL), as B2 asks for both codes. A key that is itself wrong fails the
            // authorization, which is not retried.
            buckiaCode = .transient
            advice = "Buckia authorizes again and retries."
        case (401, "unauthorized"), (_, "access_denied"):
            buckiaCode = .permissionDenied
            advice = "The application key is valid but not allowed to do this: check its capabilities, bucket and name prefix."
        case (_, "unsupported"):
            buckiaCode = .unsupported
        case (_, "cap_exceeded"), (_, "transaction_cap_exceeded"), (_, "storage_cap_exceeded"), (_, "download_cap_exceeded"):
            buckiaCode = .permissionDenied
            advice = "The account has reached a cap set in its B2 settings; raise the cap or wait for the next day."
        case (_, "not_found"), (_, "no_such_file"), (_, "file_not_present"):
            buckiaCode = .notFound
        case (_, "too_many_requests"):
            buckiaCode = .rateLimited
            advice = "Reduce maxConcurrentOperations or retry later."
        case (400, "bad_request") where (body.message ?? "").localizedCaseInsensitiveContains("sha1"):
            buckiaCode = .checksumMismatch
            advice = "The bytes changed on the way."
        case (408, _), (500..., _):
            buckiaCode = .transient
            advice = "Retry later."
        case (416, _):
            buckiaCode = .invalidConfiguration
        case (400, "invalid_bucket_id"), (400, "bad_bucket_id"):
            buckiaCode = .invalidConfiguration
            advice = "Check the bucket name and that the key may use it."
        default:
            buckiaCode = failure.status >= 500 ? .transient : .invalidConfiguration
        }
        // The code is the server's text too: escaped like the message, for both reach a terminal.
        let sentence = "B2 refused the request with \(failure.status) \(code.escapingControlCharacters)\(detail)." + (advice.isEmpty ? "" : " \(advice)")
        return BuckiaError(buckiaCode, sentence, cause: failure, retryAfter: failure.retryAfter)
    }

    /// The B2 error code of a failure, when it carried one.
    static func code(of error: BuckiaError?) -> String? {
        guard let failure = error?.cause as? HTTPFailure else { return nil }
        return (try? JSONValidation.decode(B2API.Failure.self, from: failure.body, what: "B2's error"))?.code
    }

    /// Whether the failure says the authorization it carried is no longer good: a 401 with
    /// `expired_auth_token` or `bad_auth_token`, or with no error document (a HEAD).
    static func refusedAuthorization(_ error: BuckiaError?) -> Bool {
        guard let failure = error?.cause as? HTTPFailure, failure.status == 401 else { return false }
        switch code(of: error) {
        case nil, "expired_auth_token", "bad_auth_token": return true
        default: return false
        }
    }
}

extension String {
    fileprivate var withoutTrailingPeriod: String { hasSuffix(".") ? String(dropLast()) : self }
}
