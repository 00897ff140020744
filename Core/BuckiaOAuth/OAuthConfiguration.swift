import BuckiaCore
import BuckiaSecurity
import Foundation

/// Where to log in: an OAuth 2 / OpenID Connect issuer and this app's client id.
public struct OAuthConfiguration: Sendable, Hashable {
    /// The issuer; its `/.well-known/openid-configuration` names the endpoints.
    public var issuer: URL
    /// The OAuth client id of this app (a public client: there is no client secret on a device).
    public var clientId: String
    /// The scopes to ask for; `offline_access` is what earns a refresh token.
    public var scopes: [String]
    /// The secret-store context prefix the tokens are kept under (`oauth/<name>/…`).
    public var name: String

    /// Creates a configuration.
    public init(issuer: URL, clientId: String, scopes: [String] = ["openid", "offline_access"], name: String) {
        self.issuer = issuer
        self.clientId = clientId
        self.scopes = scopes
        self.name = name
    }

    /// Okta's default authorization server for `domain` (`https://DOMAIN/oauth2/default`).
    public static func okta(domain: String, clientId: String, name: String = "okta") throws -> OAuthConfiguration {
        guard let issuer = URL(string: "https://\(domain)/oauth2/default"), issuer.host == domain else {
            throw BuckiaError(.invalidConfiguration, "The Okta domain \(domain.debugDescription) is not a host name.")
        }
        return OAuthConfiguration(issuer: issuer, clientId: clientId, name: name)
    }

    /// The configuration an ``AuthenticationConfiguration`` of method `.okta` (credentials
    /// `domain`, `clientId`) or `.oauth` (credentials `issuer`, `clientId`, optional `scopes`)
    /// describes; the token context names the store entries (else `oauth`).
    public init(_ authentication: AuthenticationConfiguration) throws {
        let name = authentication.tokenContext ?? authentication.method.rawValue
        func credential(_ key: String) throws -> String {
            guard let value = authentication.credentials[key], !value.isEmpty else {
                throw BuckiaError(.invalidConfiguration, "An \(authentication.method.rawValue) login needs the credential \(key) in authConfig.credentials.")
            }
            return value.exposedValue
        }
        switch authentication.method {
        case .okta:
            self = try .okta(domain: try credential("domain"), clientId: try credential("clientId"), name: name)
        case .oauth:
            guard let issuer = URL(string: try credential("issuer")), issuer.scheme != nil, issuer.host != nil else {
                throw BuckiaError(.invalidConfiguration, "The credential issuer of an oauth login is not a URL.")
            }
            var configuration = OAuthConfiguration(issuer: issuer, clientId: try credential("clientId"), name: name)
            if let scopes = authentication.credentials["scopes"]?.exposedValue { configuration.scopes = scopes.split(separator: " ").map(String.init) }
            self = configuration
        default:
            throw BuckiaError(.invalidConfiguration, "Logging in needs authConfig.method okta or oauth, not \(authentication.method.rawValue).")
        }
        try SecretContext.check("oauth/\(name)/refresh")
    }
}

/// What the device authorization endpoint answered (RFC 8628 §3.2): what to show the user.
public struct DeviceAuthorization: Sendable, Hashable {
    /// The code the user types.
    public var userCode: String
    /// Where the user types it.
    public var verificationURI: URL
    /// The same page with the code filled in, when the server offers one.
    public var verificationURIComplete: URL?
    /// When the device code stops working.
    public var expiresAt: Date
    /// How long to wait between polls.
    public var interval: Duration
}

/// Why a login or a refresh failed, in terms a user can act on.
public struct OAuthFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of failure.
    public enum Kind: String, Sendable, Hashable {
        /// The refresh token is gone, revoked or spent: the user must log in again.
        case loginRequired
        /// The user refused the device login.
        case accessDenied
        /// The device code expired before the user approved it.
        case expired
        /// The server answered something that is not OAuth.
        case malformed
        /// The server refused for another reason (`error` and `error_description`).
        case refused
    }

    /// The kind.
    public var kind: Kind
    /// The details (never a token).
    public var detail: String

    public var description: String {
        switch kind {
        case .loginRequired: "The login has ended (\(detail)); log in again (buckia login REMOTE)."
        case .accessDenied: "The login was refused by the user (\(detail))."
        case .expired: "The login code expired before it was approved (\(detail)); start the login again."
        case .malformed: "The authorization server's answer is not OAuth: \(detail)."
        case .refused: "The authorization server refused: \(detail)."
        }
    }

    /// The failure as a ``BuckiaError`` (`unauthorized`, or `corrupt` for a malformed answer).
    public var error: BuckiaError { BuckiaError(kind == .malformed ? .corrupt : .unauthorized, description, operation: "oauth") }
}
