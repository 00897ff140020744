import BuckiaCore
import BuckiaHTTP
import BuckiaSigV4
import Foundation

/// Where S3 credentials come from when a login provides them: an STS endpoint (AWS's, or
/// `buckia serve s3 --web-identity`), the role, and how to get the login's current token.
public struct WebIdentitySettings: Sendable {
    /// The STS endpoint (`https://sts.<region>.amazonaws.com` on AWS).
    public var stsEndpoint: URL
    /// The role to assume (`AWS_ROLE_ARN`).
    public var roleArn: String
    /// The session's name (`AWS_ROLE_SESSION_NAME`): 2 to 64 of letters, digits and `+=,.@_-`.
    public var sessionName: String
    /// How long to ask the credentials to last; the role's default (1 hour on AWS) when nil.
    public var duration: Duration?
    /// The login's current OpenID Connect token: read again for every exchange, so a token file
    /// a platform rotates, or a session that refreshes its ID token, is always current.
    public var token: @Sendable () async throws -> String

    /// Settings for `roleArn` at `stsEndpoint`, with the token from `token`.
    public init(
        stsEndpoint: URL, roleArn: String, sessionName: String, duration: Duration? = nil, token: @escaping @Sendable () async throws -> String
    ) {
        self.stsEndpoint = stsEndpoint
        self.roleArn = roleArn
        self.sessionName = sessionName
        self.duration = duration
        self.token = token
    }

    /// The token in the file at `path` (`AWS_WEB_IDENTITY_TOKEN_FILE`), read again at every call:
    /// a regular file of at most 20,000 bytes of text, surrounding white space dropped.
    public static func tokenFile(_ path: String) -> @Sendable () async throws -> String {
        {
            let file: LocalFile
            do {
                file = try LocalFile.openForReading(URL(fileURLWithPath: path))
            } catch let error as BuckiaError where error.code == .notFound {
                throw BuckiaError(.unauthorized, "The web identity token file \(path) does not exist; log in again, or fix AWS_WEB_IDENTITY_TOKEN_FILE.", path: path)
            }
            defer { file.closeAfterReading() }
            let size = try file.status().size
            guard size > 0, size <= 20_000, let text = String(data: try file.read(count: Int(size), at: 0), encoding: .utf8) else {
                throw BuckiaError(.unauthorized, "The web identity token file \(path) holds no token (1 to 20,000 bytes of text).", path: path)
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
}

/// Temporary S3 credentials from a login, renewed before they expire: STS's
/// `AssumeRoleWithWebIdentity`, as the AWS SDKs' web-identity provider calls it.
///
/// The credentials in hand are used while more than ``refreshMargin`` of them is left (or half
/// their lifetime, for short ones); then the login's token is traded again. Callers that find
/// them due at once share one exchange. A refused exchange (the login was revoked, its token
/// expired) is the caller's error, and the next call tries again.
public actor WebIdentityCredentials: AWSCredentialSource {
    /// What to exchange, and where.
    public nonisolated let settings: WebIdentitySettings
    /// How long before expiry credentials are renewed.
    public nonisolated let refreshMargin: Duration
    private let http: HTTPClient
    private let clock: @Sendable () -> Date
    private var current: (credentials: AWSCredentials, expiresAt: Date, receivedAt: Date)?
    private var exchanging: Task<(AWSCredentials, Date), any Error>?
    /// How many exchanges were sent: for tests that count refreshes.
    package private(set) var exchanges = 0

    /// A source that exchanges through `http`, renewing `refreshMargin` (5 minutes) before expiry.
    public init(
        settings: WebIdentitySettings, http: HTTPClient, refreshMargin: Duration = .seconds(300), clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.settings = settings
        self.http = http
        self.refreshMargin = refreshMargin
        self.clock = clock
    }

    /// When the credentials in hand expire, if there are any.
    public var expiration: Date? { current?.expiresAt }

    public func credentials() async throws -> AWSCredentials {
        if let current {
            let margin = min(Double(refreshMargin.components.seconds), current.expiresAt.timeIntervalSince(current.receivedAt) / 2)
            if current.expiresAt.timeIntervalSince(clock()) > margin { return current.credentials }
        }
        if let exchanging { return try await exchanging.value.0 }
        exchanges += 1
        let task = Task { try await self.exchange() }
        exchanging = task
        defer { exchanging = nil }
        let (credentials, expiresAt) = try await task.value
        current = (credentials, expiresAt, clock())
        return credentials
    }

    private func exchange() async throws -> (AWSCredentials, Date) {
        let token: String
        do {
            token = try await settings.token()
        } catch let error as BuckiaError {
            throw error
        } catch {
            // A login that cannot give a token (it ended, or was revoked) is an authorization
            // failure to the S3 caller, whatever the login's own error type.
            throw BuckiaError(
                .unauthorized, "The login gave no token to exchange for S3 credentials: \(error)", operation: "AssumeRoleWithWebIdentity", cause: error)
        }
        var fields = [
            ("Action", "AssumeRoleWithWebIdentity"), ("Version", "2011-06-15"), ("RoleArn", settings.roleArn),
            ("RoleSessionName", settings.sessionName), ("WebIdentityToken", token),
        ]
        if let duration = settings.duration { fields.append(("DurationSeconds", String(duration.components.seconds))) }
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        var request = HTTPRequest(.post, settings.stsEndpoint, body: .data(Data(body.utf8)), accepts: .all)
        request.headers.set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
        request.maximumBodySize = 256 << 10
        let response = try await http.send(request)
        let root: XMLNode
        do {
            root = try XMLNode.parse(response.data, what: "AssumeRoleWithWebIdentity", from: "STS")
        } catch {
            throw BuckiaError(.corrupt, "STS at \(settings.stsEndpoint.absoluteString) answered HTTP \(response.status) with a body that is not its XML.", operation: "AssumeRoleWithWebIdentity")
        }
        guard response.status == 200 else { throw Self.failure(root, status: response.status, endpoint: settings.stsEndpoint) }
        guard let result = root.child("AssumeRoleWithWebIdentityResult")?.child("Credentials"),
              let id = result.value("AccessKeyId"), !id.isEmpty, let secret = result.value("SecretAccessKey"), !secret.isEmpty,
              let session = result.value("SessionToken"), !session.isEmpty,
              let expirationText = result.value("Expiration"), let expiresAt = Self.date(expirationText)
        else {
            throw BuckiaError(.corrupt, "STS at \(settings.stsEndpoint.absoluteString) answered without complete credentials.", operation: "AssumeRoleWithWebIdentity")
        }
        return (AWSCredentials(accessKeyId: id, secretAccessKey: Secret(secret), sessionToken: Secret(session)), expiresAt)
    }

    /// STS's error as a ``BuckiaCore/BuckiaError`` a user can act on.
    static func failure(_ root: XMLNode, status: Int, endpoint: URL) -> BuckiaError {
        let error = root.child("Error")
        let code = error?.value("Code") ?? "HTTP \(status)"
        let message = error?.value("Message").map { ": " + $0.escapingControlCharacters.withoutTerminalPeriod } ?? ""
        let what = "STS at \(endpoint.absoluteString) refused the login (\(code)\(message))."
        switch code {
        case "InvalidIdentityToken", "ExpiredTokenException", "ExpiredToken":
            return BuckiaError(.unauthorized, what + " Log in again.", operation: "AssumeRoleWithWebIdentity")
        case "IDPRejectedClaim", "AccessDenied":
            return BuckiaError(.permissionDenied, what + " This login may not assume the role.", operation: "AssumeRoleWithWebIdentity")
        case "IDPCommunicationError", "Throttling", "ServiceUnavailable", "InternalFailure":
            return BuckiaError(.transient, what + " Try again.", operation: "AssumeRoleWithWebIdentity")
        default:
            return BuckiaError(
                status >= 500 ? .transient : .invalidConfiguration, what + " Check the role, session name and duration.", operation: "AssumeRoleWithWebIdentity")
        }
    }

    /// STS's `Expiration`: ISO 8601, whole or fractional seconds.
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions.insert(.withFractionalSeconds)
        return formatter.date(from: text)
    }
}
