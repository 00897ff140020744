import BuckiaCore
import BuckiaSecurity
import Foundation

/// Which logins `AssumeRoleWithWebIdentity` trusts, and what the credentials it gives them may
/// do: AWS STS's shape, so an SDK's web-identity credential provider gets its S3 credentials
/// from the gateway unchanged.
public struct WebIdentityPolicy: Sendable {
    /// Checks the token a request presents: issuer, audiences, keys, clock leeway.
    public var verifier: WebIdentityVerifier
    /// The grants each credential gets, `${sub}` filled in with the login's subject.
    public var grants: GrantTemplate
    /// The role a request must name (`RoleArn`), when set; any when nil.
    public var roleArn: String?
    /// The longest a credential may last (a role's maximum session duration: 1 to 12 hours).
    public var maximumDuration: Duration
    /// How long a credential lasts when the request names no `DurationSeconds` (STS's 1 hour,
    /// or the maximum when that is shorter).
    public var defaultDuration: Duration { min(.seconds(3600), maximumDuration) }

    /// The shortest duration STS accepts.
    public static let minimumDuration = Duration.seconds(900)

    /// A policy trusting `verifier`'s logins with `grants`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a maximum duration
    ///   outside 15 minutes to 12 hours.
    public init(verifier: WebIdentityVerifier, grants: GrantTemplate, roleArn: String? = nil, maximumDuration: Duration = .seconds(3600)) throws {
        guard maximumDuration >= Self.minimumDuration, maximumDuration <= .seconds(43_200) else {
            throw BuckiaError(.invalidConfiguration, "A web identity credential lasts 15 minutes to 12 hours at most; \(maximumDuration) was given.")
        }
        self.verifier = verifier
        self.grants = grants
        self.roleArn = roleArn
        self.maximumDuration = maximumDuration
    }
}

/// An STS error: the query protocol's `<ErrorResponse>`, which SDKs read.
struct STSFailure: Error {
    var code: String
    var message: String
    var status: Int

    init(_ code: String, _ message: String, status: Int = 400) {
        self.code = code
        self.message = message
        self.status = status
    }

    func response(requestId: String) -> HTTPServerResponse {
        let type = status >= 500 ? "Receiver" : "Sender"
        return S3Gateway.xml(
            "<ErrorResponse xmlns=\"\(S3Gateway.stsNamespace)\"><Error><Type>\(type)</Type><Code>\(code.xmlEscaped)</Code><Message>\(message.xmlEscaped)</Message></Error><RequestId>\(requestId)</RequestId></ErrorResponse>",
            status: status)
    }
}

extension S3Gateway {
    static let stsNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"
    /// The largest STS request body read: a token of STS's 20,000 characters and the rest.
    static let maximumSTSBody = 32 * 1024

    /// Whether a request to the service root is an STS call: a form POST, as SDKs send it, or
    /// a query naming an `Action`.
    static func isSTSRequest(_ context: RequestContext) -> Bool {
        guard context.bucket.isEmpty else { return false }
        if context.query["Action"] != nil { return true }
        guard context.request.method == "POST" else { return false }
        return context.request.values("content-type").contains { $0.lowercased().hasPrefix("application/x-www-form-urlencoded") }
    }

    /// Answers an STS request; every refusal is an STS error, never an S3 one.
    func stsResponse(_ context: inout RequestContext, body: HTTPRequestBody) -> HTTPServerResponse {
        context.operation = "AssumeRoleWithWebIdentity"
        do {
            return try assumeRoleWithWebIdentity(&context, body: body)
        } catch let failure as STSFailure {
            context.errorCode = failure.code
            return failure.response(requestId: context.requestId)
        } catch {
            let failure = STSFailure("InternalFailure", "The gateway failed: \(BuckiaError.wrapping(error, operation: "serve s3").message)", status: 500)
            context.errorCode = failure.code
            return failure.response(requestId: context.requestId)
        }
    }

    private func assumeRoleWithWebIdentity(_ context: inout RequestContext, body: HTTPRequestBody) throws -> HTTPServerResponse {
        var parameters = context.query
        if context.request.method == "POST" {
            for (name, value) in try Self.formParameters(body, context: &context) {
                guard parameters.updateValue(value, forKey: name) == nil else { throw STSFailure("ValidationError", "The parameter \(name) is given twice.") }
            }
        } else if context.request.method != "GET" {
            throw STSFailure("InvalidAction", "STS is called with GET or POST, not \(context.request.method).")
        }
        guard let action = parameters["Action"] else { throw STSFailure("MissingAction", "The request names no Action.") }
        guard action == "AssumeRoleWithWebIdentity" else {
            throw STSFailure("InvalidAction", "This gateway's STS answers AssumeRoleWithWebIdentity only, not \(action.debugDescription).")
        }
        if let version = parameters["Version"], version != "2011-06-15" {
            throw STSFailure("InvalidParameterValue", "The STS API version \(version.debugDescription) is not 2011-06-15.")
        }
        guard let policy = options.webIdentity, let keys = authenticator.issuingKeys else {
            throw STSFailure("InvalidAction", "This gateway trusts no web identity issuer (serve s3 --web-identity).")
        }
        for unsupported in ["Policy", "ProviderId"] + parameters.keys.filter({ $0.hasPrefix("PolicyArns.") }).sorted() where parameters[unsupported] != nil {
            throw STSFailure("ValidationError", "The parameter \(unsupported) is not supported: the grants come from the gateway's template alone.")
        }
        guard let token = parameters["WebIdentityToken"], !token.isEmpty else { throw STSFailure("MissingParameter", "The request has no WebIdentityToken.") }
        guard token.utf8.count <= 20_000 else { throw STSFailure("ValidationError", "The WebIdentityToken is over 20,000 characters.") }
        guard let roleArn = parameters["RoleArn"], (20...2048).contains(roleArn.utf8.count) else {
            throw STSFailure("ValidationError", "RoleArn must be given, 20 to 2048 characters.")
        }
        if let wanted = policy.roleArn, roleArn != wanted {
            throw STSFailure("AccessDenied", "Not authorized to assume the role \(roleArn.debugDescription).", status: 403)
        }
        guard let session = parameters["RoleSessionName"], Self.isSessionName(session) else {
            throw STSFailure("ValidationError", "RoleSessionName must be given: 2 to 64 of letters, digits and +=,.@_-.")
        }
        var duration = policy.defaultDuration
        if let text = parameters["DurationSeconds"] {
            guard text.utf8.count <= 6, text.utf8.allSatisfy({ (48...57).contains($0) }), let seconds = Int(text),
                  Duration.seconds(seconds) >= WebIdentityPolicy.minimumDuration, Duration.seconds(seconds) <= policy.maximumDuration
            else {
                throw STSFailure(
                    "ValidationError",
                    "DurationSeconds must be 900 to \(policy.maximumDuration.components.seconds), this role's maximum session duration.")
            }
            duration = .seconds(seconds)
        }

        let claims: WebIdentityClaims
        do {
            claims = try Blocking.wait { try await policy.verifier.verify(token) }
        } catch let refusal as UserTokenRefusal {
            if refusal.reason == .expired { throw STSFailure("ExpiredTokenException", "The web identity token is expired: \(refusal.detail).") }
            throw STSFailure("InvalidIdentityToken", "The web identity token is refused (\(refusal.reason.rawValue)): \(refusal.detail).")
        } catch {
            throw STSFailure(
                "IDPCommunicationError", "The identity provider's keys could not be read: \(BuckiaError.wrapping(error, operation: "read the issuer's keys").message)")
        }
        let grants: StorageGrants
        do {
            grants = try policy.grants.grants(subject: claims.subject)
        } catch {
            throw STSFailure("IDPRejectedClaim", BuckiaError.wrapping(error, operation: "AssumeRoleWithWebIdentity").message, status: 403)
        }
        context.principal = GatewayPrincipal(name: claims.subject, grants: grants)
        let credentials = try keys.issue(userId: claims.subject, grants: grants, lifetime: duration, clock: options.clock)
        let role = roleArn.split(separator: "/").last.map(String.init) ?? "web-identity"
        let audience = claims.audience.first { policy.verifier.audiences.contains($0) } ?? ""
        let result = """
            <AssumeRoleWithWebIdentityResponse xmlns="\(Self.stsNamespace)"><AssumeRoleWithWebIdentityResult>\
            <SubjectFromWebIdentityToken>\(claims.subject.xmlEscaped)</SubjectFromWebIdentityToken>\
            <Audience>\(audience.xmlEscaped)</Audience>\
            <AssumedRoleUser><Arn>arn:aws:sts::000000000000:assumed-role/\(role.xmlEscaped)/\(session.xmlEscaped)</Arn>\
            <AssumedRoleId>\(credentials.accessKeyId):\(session.xmlEscaped)</AssumedRoleId></AssumedRoleUser>\
            <Credentials><AccessKeyId>\(credentials.accessKeyId)</AccessKeyId>\
            <SecretAccessKey>\(credentials.secretAccessKey.exposedValue.xmlEscaped)</SecretAccessKey>\
            <SessionToken>\(credentials.sessionToken.exposedValue.xmlEscaped)</SessionToken>\
            <Expiration>\(Self.stsDate(credentials.expiresAt))</Expiration></Credentials>\
            <Provider>\(claims.issuer.xmlEscaped)</Provider>\
            </AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>\(context.requestId)</RequestId></ResponseMetadata>\
            </AssumeRoleWithWebIdentityResponse>
            """
        var response = Self.xml(result)
        // Credentials are not for caches (RFC 9111 §5.2.2.5).
        response.headers.append(("Cache-Control", "no-store"))
        return response
    }

    /// The parameters of a form body (`application/x-www-form-urlencoded`), at most
    /// ``maximumSTSBody`` bytes.
    private static func formParameters(_ body: HTTPRequestBody, context: inout RequestContext) throws -> [(String, String)] {
        var data = Data()
        while let chunk = try body.read(upTo: 16 * 1024) {
            data.append(chunk)
            guard data.count <= maximumSTSBody else { throw STSFailure("ValidationError", "The request body is over \(maximumSTSBody >> 10) KiB.") }
        }
        context.bytesIn = Int64(data.count)
        guard let text = String(data: data, encoding: .utf8) else { throw STSFailure("ValidationError", "The request body is not UTF-8.") }
        var pairs: [(String, String)] = []
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) throws -> String {
                guard let value = percentDecoded(Substring(part.replacingOccurrences(of: "+", with: " "))) else {
                    throw STSFailure("ValidationError", "The request body is not a well-formed form.")
                }
                return value
            }
            pairs.append((try decode(parts[0]), parts.count > 1 ? try decode(parts[1]) : ""))
        }
        return pairs
    }

    /// STS's rule for a session name: `[\w+=,.@-]{2,64}`.
    static func isSessionName(_ name: String) -> Bool {
        (2...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
                case UInt8(ascii: "_"), UInt8(ascii: "+"), UInt8(ascii: "="), UInt8(ascii: ","), UInt8(ascii: "."), UInt8(ascii: "@"), UInt8(ascii: "-"): true
                default: false
                }
            }
    }

    /// STS's `Expiration`: ISO 8601 in UTC, whole seconds.
    static func stsDate(_ date: Date) -> String {
        let parts = utcParts(date)
        return "\(digits(Int(parts.tm_year) + 1900, 4))-\(digits(Int(parts.tm_mon) + 1, 2))-\(digits(Int(parts.tm_mday), 2))T"
            + "\(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2)):\(digits(Int(parts.tm_sec), 2))Z"
    }
}
