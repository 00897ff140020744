import BuckiaCore
import Foundation

/// A request as a server received it: what SigV4 verification reads.
public struct SigV4Request: Sendable {
    /// The method, as sent.
    public var method: String
    /// The request target as sent: the percent-encoded path and query (`/bucket/a%20b?x-id=1`).
    public var target: String
    /// Every header field in the order received; a name may repeat.
    public var headers: [(name: String, value: String)]

    /// Creates a request.
    public init(method: String, target: String, headers: [(name: String, value: String)]) {
        self.method = method
        self.target = target
        self.headers = headers
    }

    /// Every value of the header `name` (case-insensitive), in order.
    public func values(_ name: String) -> [String] {
        headers.compactMap { $0.name.equalsIgnoringASCIICase(name) ? $0.value : nil }
    }

    /// The header `name`, when it was sent exactly once.
    public func single(_ name: String) -> String? {
        let all = values(name)
        return all.count == 1 ? all[0] : nil
    }
}

/// What a SigV4 signature claims: who signed, when, over what.
public struct SigV4Authorization: Sendable, Hashable {
    /// The access key id of `Credential=`.
    public var accessKeyId: String
    /// The scope's day (`yyyyMMdd`), region and service.
    public var day: String
    public var region: String
    public var service: String
    /// The signed header names, lowercase.
    public var signedHeaders: [String]
    /// The hex signature.
    public var signature: String
    /// When the request was signed (`x-amz-date` or `X-Amz-Date`).
    public var date: Date
    /// The payload hash the signature covers: hex SHA-256, `UNSIGNED-PAYLOAD` or a streaming form.
    public var payloadHash: String
    /// The session token sent with temporary credentials, if any.
    public var sessionToken: String?
    /// For a presigned URL, when it stops working.
    public var expiresAt: Date?

    /// Whether the signature is in the query (a presigned URL) rather than a header.
    public var isPresigned: Bool { expiresAt != nil }
}

/// Why a SigV4 request is refused, with the S3 error code a server answers.
public struct SigV4Refusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// S3's code: `AccessDenied`, `SignatureDoesNotMatch`, `RequestTimeTooSkewed`,
    /// `AuthorizationHeaderMalformed`, `AuthorizationQueryParametersError`, `InvalidArgument`,
    /// `MissingSecurityHeader`, `InvalidAccessKeyId`, `ExpiredToken`, `InvalidToken`.
    public var code: String
    /// The message (never a secret: signatures and tokens are not quoted).
    public var message: String
    /// The HTTP status where S3 answers this code with another than its usual one.
    public var statusOverride: Int?

    /// Creates a refusal; `status` where S3 answers `code` with an unusual status.
    public init(_ code: String, _ message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        statusOverride = status
    }

    public var description: String { "\(code): \(message)" }

    /// The HTTP status S3 answers with this code.
    public var status: Int {
        if let statusOverride { return statusOverride }
        return switch code {
        case "AuthorizationHeaderMalformed", "AuthorizationQueryParametersError", "InvalidArgument", "MissingSecurityHeader", "InvalidToken", "ExpiredToken": 400
        default: 403
        }
    }
}

/// Checks AWS Signature Version 4 on requests a server receives: header authorization and
/// presigned URLs, for S3. The mirror of ``SigV4Signer``, whose canonical request it rebuilds.
///
/// ``parse(_:)`` reads what the signature claims without a secret (so a server can look the
/// secret up by access key id, or derive it from a session token); ``verify(_:_:secret:now:)``
/// checks it. The body's hash is the caller's to check as it streams, against
/// ``SigV4Authorization/payloadHash``.
public enum SigV4Verifier {
    /// How far a header-signed request's date may be from the server's clock: S3's 15 minutes.
    public static let maximumSkew: TimeInterval = 900

    /// The payload hashes S3 accepts besides a hex SHA-256.
    public static let specialPayloadHashes: Set<String> = [
        "UNSIGNED-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
    ]

    /// What the request's signature claims.
    ///
    /// - Throws: ``SigV4Refusal`` when the request is not signed, or its authorization is malformed.
    public static func parse(_ request: SigV4Request) throws(SigV4Refusal) -> SigV4Authorization {
        let query = queryItems(request.target)
        if query.contains(where: { $0.0 == "X-Amz-Algorithm" || $0.0 == "X-Amz-Signature" }) {
            return try parsePresigned(request, query)
        }
        let authorizations = request.values("authorization")
        guard authorizations.count == 1, let header = authorizations.first else {
            throw SigV4Refusal(authorizations.isEmpty ? "AccessDenied" : "AuthorizationHeaderMalformed", authorizations.isEmpty ? "The request is not signed." : "The request has more than one Authorization header.")
        }
        guard header.hasPrefix("AWS4-HMAC-SHA256 ") else {
            throw SigV4Refusal("AuthorizationHeaderMalformed", "Only AWS4-HMAC-SHA256 authorization is accepted.")
        }
        var fields: [String: String] = [:]
        for part in header.dropFirst("AWS4-HMAC-SHA256 ".count).split(separator: ",") {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            guard let equals = trimmed.firstIndex(of: "="), fields.updateValue(String(trimmed[trimmed.index(after: equals)...]), forKey: String(trimmed[..<equals])) == nil
            else { throw SigV4Refusal("AuthorizationHeaderMalformed", "The Authorization header is not Credential=…, SignedHeaders=…, Signature=….") }
        }
        guard fields.count == 3, let credential = fields["Credential"], let signed = fields["SignedHeaders"], let signature = fields["Signature"] else {
            throw SigV4Refusal("AuthorizationHeaderMalformed", "The Authorization header needs exactly Credential, SignedHeaders and Signature.")
        }
        guard let dateText = request.single("x-amz-date") else {
            throw SigV4Refusal("AccessDenied", "A header-signed request needs one x-amz-date header.")
        }
        guard let payloadHash = request.single("x-amz-content-sha256") else {
            throw SigV4Refusal("InvalidArgument", "An S3 request signed in its headers needs one x-amz-content-sha256 header.")
        }
        let tokens = request.values("x-amz-security-token")
        guard tokens.count <= 1 else { throw SigV4Refusal("InvalidToken", "The request has more than one x-amz-security-token header.") }
        var authorization = try assemble(
            credential: credential, signedHeaders: signed, signature: signature, date: dateText, payloadHash: payloadHash, token: tokens.first,
            code: "AuthorizationHeaderMalformed")
        authorization.expiresAt = nil
        for required in ["host", "x-amz-date", "x-amz-content-sha256"] where !authorization.signedHeaders.contains(required) {
            throw SigV4Refusal("AccessDenied", "The header \(required) must be signed.")
        }
        // Every x-amz-* header the server will act on must be covered by the signature.
        for (name, _) in request.headers where name.lowercased().hasPrefix("x-amz-") && !authorization.signedHeaders.contains(name.lowercased()) {
            throw SigV4Refusal("AccessDenied", "The header \(name.lowercased()) is sent but not signed.")
        }
        return authorization
    }

    private static func parsePresigned(_ request: SigV4Request, _ query: [(String, String)]) throws(SigV4Refusal) -> SigV4Authorization {
        var fields: [String: String] = [:]
        for (name, value) in query where name.hasPrefix("X-Amz-") {
            guard fields.updateValue(value, forKey: name) == nil else {
                throw SigV4Refusal("AuthorizationQueryParametersError", "The query names \(name) twice.")
            }
        }
        guard fields["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256", let credential = fields["X-Amz-Credential"], let dateText = fields["X-Amz-Date"],
              let expiresText = fields["X-Amz-Expires"], let signed = fields["X-Amz-SignedHeaders"], let signature = fields["X-Amz-Signature"]
        else {
            throw SigV4Refusal(
                "AuthorizationQueryParametersError",
                "A presigned URL needs X-Amz-Algorithm=AWS4-HMAC-SHA256, X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature.")
        }
        guard request.values("authorization").isEmpty else {
            throw SigV4Refusal("InvalidArgument", "A request may be signed in its query or in its Authorization header, not both.")
        }
        // As S3 answers (403 for each): a URL of 0 seconds is valid and has expired at once.
        guard expiresText.utf8.count <= 12, let seconds = Int(expiresText) else {
            throw SigV4Refusal("AuthorizationQueryParametersError", "X-Amz-Expires should be a number", status: 403)
        }
        guard seconds >= 0 else { throw SigV4Refusal("AuthorizationQueryParametersError", "X-Amz-Expires must be non-negative", status: 403) }
        guard seconds <= 604_800 else {
            throw SigV4Refusal(
                "AuthorizationQueryParametersError",
                "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds", status: 403)
        }
        let payloadHash = request.single("x-amz-content-sha256") ?? "UNSIGNED-PAYLOAD"
        var authorization = try assemble(
            credential: credential, signedHeaders: signed, signature: signature, date: dateText, payloadHash: payloadHash,
            token: fields["X-Amz-Security-Token"], code: "AuthorizationQueryParametersError")
        authorization.expiresAt = authorization.date.addingTimeInterval(Double(seconds))
        guard authorization.signedHeaders.contains("host") else { throw SigV4Refusal("AccessDenied", "The header host must be signed.") }
        return authorization
    }

    private static func assemble(
        credential: String, signedHeaders: String, signature: String, date dateText: String, payloadHash: String, token: String?, code: String
    ) throws(SigV4Refusal) -> SigV4Authorization {
        let scope = credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard scope.count == 5, !scope[0].isEmpty, scope[0].count <= 128, scope[1].count == 8, scope[1].allSatisfy(\.isASCIIDigit), !scope[2].isEmpty,
              scope[4] == "aws4_request"
        else { throw SigV4Refusal(code, "The credential must be ACCESS_KEY/yyyyMMdd/REGION/SERVICE/aws4_request.") }
        guard scope[3] == "s3" else { throw SigV4Refusal(code, "The credential's service must be s3, not \(scope[3].debugDescription).") }
        let names = signedHeaders.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        guard !names.isEmpty, names.allSatisfy({ !$0.isEmpty && $0 == $0.lowercased() }), names == names.sorted(), Set(names).count == names.count else {
            throw SigV4Refusal(code, "SignedHeaders must be lowercase header names, sorted, each once.")
        }
        guard signature.utf8.count == 64, signature.utf8.allSatisfy({ Self.isLowerHex($0) }) else {
            throw SigV4Refusal(code, "The signature must be 64 lowercase hex digits.")
        }
        guard let date = parseDate(dateText) else { throw SigV4Refusal(code, "The date must be yyyyMMdd'T'HHmmss'Z'.") }
        guard dateText.hasPrefix(scope[1]) else { throw SigV4Refusal(code, "The credential's day \(scope[1]) is not the day the request is dated.") }
        guard specialPayloadHashes.contains(payloadHash) || (payloadHash.utf8.count == 64 && payloadHash.utf8.allSatisfy({ Self.isLowerHex($0) })) else {
            throw SigV4Refusal("InvalidArgument", "x-amz-content-sha256 must be a hex SHA-256 or one of \(specialPayloadHashes.sorted().joined(separator: ", ")).")
        }
        return SigV4Authorization(
            accessKeyId: scope[0], day: scope[1], region: scope[2], service: scope[3], signedHeaders: names, signature: signature, date: date,
            payloadHash: payloadHash, sessionToken: token, expiresAt: nil)
    }

    /// Checks the signature with the secret of ``SigV4Authorization/accessKeyId`` and the time.
    ///
    /// - Throws: ``SigV4Refusal``: `SignatureDoesNotMatch`, `RequestTimeTooSkewed`, or
    ///   `AccessDenied` for an expired presigned URL.
    public static func verify(_ request: SigV4Request, _ authorization: SigV4Authorization, secret: Secret, now: Date) throws(SigV4Refusal) {
        if let expiresAt = authorization.expiresAt {
            guard authorization.date.timeIntervalSince(now) <= maximumSkew else {
                throw SigV4Refusal("AccessDenied", "The presigned URL is dated in the future.")
            }
            guard now < expiresAt else { throw SigV4Refusal("AccessDenied", "Request has expired.") }
        } else {
            guard abs(authorization.date.timeIntervalSince(now)) <= maximumSkew else {
                throw SigV4Refusal("RequestTimeTooSkewed", "The difference between the request time and the server's time is too large.")
            }
        }
        var headers: [String: String] = [:]
        for name in authorization.signedHeaders {
            let values = request.values(name)
            guard !values.isEmpty else { throw SigV4Refusal("AccessDenied", "The signed header \(name) is not in the request.") }
            headers[name] = values.map(SigV4Canonical.trimmed).joined(separator: ",")
        }
        // The canonical request from the target as received; a presigned URL's signature is not part of it.
        var target = request.target
        if authorization.isPresigned { target = removingSignature(from: target) }
        let credentials = AWSCredentials(accessKeyId: authorization.accessKeyId, secretAccessKey: secret)
        let signer = SigV4Signer(credentials: credentials, region: authorization.region, service: authorization.service)
        let canonical: (text: String, signedHeaders: String)
        if let (path, query) = SigV4Canonical.pathAndQuery(ofTarget: target) {
            canonical = signer.canonicalRequest(
                method: request.method, path: SigV4Canonical.path(percentEncoded: path, encoding: signer.pathEncoding),
                query: SigV4Canonical.query(percentEncoded: query), headers: headers, payloadHash: authorization.payloadHash)
        } else {
            guard target.hasPrefix("/"), let url = URL(string: "http://gateway.invalid" + target) else {
                throw SigV4Refusal("InvalidArgument", "The request target cannot be read.")
            }
            canonical = signer.canonicalRequest(method: request.method, url: url, headers: headers, payloadHash: authorization.payloadHash)
        }
        let expected = signer.signature(stringToSign: signer.stringToSign(canonicalRequest: canonical.text, date: authorization.date), date: authorization.date)
        guard HMAC.constantTimeEquals(Array(expected.utf8), Array(authorization.signature.utf8)) else {
            throw SigV4Refusal("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
        }
    }

    /// The target without its `X-Amz-Signature` parameter, every other byte as sent.
    static func removingSignature(from target: String) -> String {
        guard let question = target.firstIndex(of: "?") else { return target }
        let kept = target[target.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("X-Amz-Signature=") }
        return String(target[..<question]) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
    }

    static func queryItems(_ target: String) -> [(String, String)] {
        guard let question = target.firstIndex(of: "?") else { return [] }
        return target[target.index(after: question)...].split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let equals = pair.firstIndex(of: "=") {
                return (SigV4Canonical.decode(pair[..<equals]), SigV4Canonical.decode(pair[pair.index(after: equals)...]))
            }
            return (SigV4Canonical.decode(pair), "")
        }
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC, checked field by field.
    package static func parseDate(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 16, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            let digits = bytes[range]
            guard digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
            return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8), let hour = number(9..<11), let minute = number(11..<13),
              let second = number(13..<15), (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day, components.hour, components.minute, components.second) = (year, month, day, hour, minute, second)
        var calendar = Calendar(identifier: .gregorian)
        guard let utc = TimeZone(identifier: "UTC") else { return nil }
        calendar.timeZone = utc
        guard let date = calendar.date(from: components), SigV4Date(date).timestamp == text else { return nil }
        return date
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
