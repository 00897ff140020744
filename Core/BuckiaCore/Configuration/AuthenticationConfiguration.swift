/// How a provider authenticates.
public enum AuthenticationMethod: String, Sendable, Codable, CaseIterable {
    /// A single key sent with each request (Bunny's `AccessKey`).
    case apiKey
    /// Okta single sign-on; the provider receives a token obtained through it.
    case okta
    /// An OAuth 2 bearer token.
    case oauth
    /// AWS Signature Version 4 with an access key id and secret (S3 and compatibles).
    case awsSignature
    /// A pre-issued token (a Buckia user token, a B2 authorization).
    case token
    /// No credentials (local providers, public buckets).
    case none
}

/// Credentials and how to use them.
///
/// Every credential is a ``Secret``: it encodes to JSON as written but never prints.
///
/// ```swift
/// let auth = AuthenticationConfiguration.awsSignature(accessKeyId: "AKIA…", secretAccessKey: secret)
/// print(auth)  // AuthenticationConfiguration(method: awsSignature, credentials: [accessKeyId: <REDACTED>, …])
/// ```
public struct AuthenticationConfiguration: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The authentication method.
    public var method: AuthenticationMethod
    /// The credentials the method needs, by name (`apiKey`, `accessKeyId`, `secretAccessKey`, …).
    public var credentials: [String: Secret]
    /// The name under which a token manager stores this context's token.
    public var tokenContext: String?

    /// Creates an authentication configuration.
    public init(method: AuthenticationMethod, credentials: [String: Secret] = [:], tokenContext: String? = nil) {
        self.method = method
        self.credentials = credentials
        self.tokenContext = tokenContext
    }

    /// No credentials.
    public static let none = AuthenticationConfiguration(method: .none)

    /// A single API key.
    public static func apiKey(_ key: String, context: String? = nil) -> AuthenticationConfiguration {
        AuthenticationConfiguration(method: .apiKey, credentials: ["apiKey": Secret(key)], tokenContext: context)
    }

    /// Okta sign-in for `domain` with an OAuth client id.
    public static func okta(domain: String, clientId: String) -> AuthenticationConfiguration {
        AuthenticationConfiguration(method: .okta, credentials: ["domain": Secret(domain), "clientId": Secret(clientId)])
    }

    /// AWS Signature Version 4 credentials.
    public static func awsSignature(accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil) -> AuthenticationConfiguration {
        var credentials: [String: Secret] = ["accessKeyId": Secret(accessKeyId), "secretAccessKey": Secret(secretAccessKey)]
        if let sessionToken { credentials["sessionToken"] = Secret(sessionToken) }
        return AuthenticationConfiguration(method: .awsSignature, credentials: credentials)
    }

    /// A pre-issued token.
    public static func token(_ token: String, context: String? = nil) -> AuthenticationConfiguration {
        AuthenticationConfiguration(method: .token, credentials: ["token": Secret(token)], tokenContext: context)
    }

    /// Credentials in a provider's own vocabulary, such as B2's `applicationKeyId` and `applicationKey`.
    public static func providerSpecific(type: ProviderType, credentials: [String: String]) -> AuthenticationConfiguration {
        AuthenticationConfiguration(
            method: .token, credentials: credentials.mapValues { Secret($0) }, tokenContext: type.rawValue)
    }

    /// The named credential, or an ``BuckiaError/Code/invalidConfiguration`` error saying it is missing.
    public func requireCredential(_ name: String, for provider: ProviderType) throws -> Secret {
        guard let value = credentials[name], !value.isEmpty else {
            throw BuckiaError(
                .invalidConfiguration,
                "The \(provider) provider needs the credential \(name.debugDescription) in authConfig.credentials.",
                path: "authConfig.credentials.\(name)")
        }
        return value
    }

    public var description: String {
        let names = credentials.keys.sorted().map { "\($0): <REDACTED>" }.joined(separator: ", ")
        let context = tokenContext.map { ", tokenContext: \($0)" } ?? ""
        return "AuthenticationConfiguration(method: \(method.rawValue), credentials: [\(names)]\(context))"
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case method, credentials, tokenContext }

    public init(from decoder: any Decoder) throws {
        try ConfigurationDecoding.rejectUnknownKeys(in: decoder, allowed: CodingKeys.allCases.map(\.stringValue))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        method = try container.decode(AuthenticationMethod.self, forKey: .method)
        credentials = try container.decodeIfPresent([String: Secret].self, forKey: .credentials) ?? [:]
        tokenContext = try container.decodeIfPresent(String.self, forKey: .tokenContext)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(method, forKey: .method)
        if !credentials.isEmpty { try container.encode(credentials, forKey: .credentials) }
        try container.encodeIfPresent(tokenContext, forKey: .tokenContext)
    }
}
