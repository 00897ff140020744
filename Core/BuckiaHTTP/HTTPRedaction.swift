import Foundation

/// Which header fields, query parameters and error-body elements hold credentials, and how to
/// print requests, URLs and server messages without them.
///
/// Every description, log line and error BuckiaHTTP builds goes through these rules, so a key,
/// token or signature never reaches a log. Names compare case-insensitively. A name is
/// sensitive when it is in the exact list or contains one of the markers; over-redacting a
/// harmless value costs a little debugging, leaking a credential costs an account.
///
/// Defaults:
/// - Headers: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`,
///   `X-Amz-Security-Token`, `AccessKey` (Bunny), `X-Api-Key`, `X-Auth-Token`, the SSE-C
///   `*-Customer-Key` headers, and any name containing `auth`, `token`, `secret`, `password`,
///   `cookie`, `credential`, `signature`, `api-key`, `apikey`, `accesskey`, `access-key` or
///   `customer-key` (so `X-Bz-*-Auth*` headers are covered).
/// - Query parameters: `X-Amz-Signature`, `X-Amz-Credential`, `X-Amz-Security-Token`,
///   `Signature`, `AWSAccessKeyId`, `X-Goog-Signature`, `X-Goog-Credential`, `token`,
///   `access_token`, `Authorization` (B2 download tokens), `key`, `api_key`, `apikey`, `sig`
///   (Azure SAS), `password`, `secret`, `client_secret`, and any name containing `signature`,
///   `token`, `secret`, `password` or `credential`.
/// - Error-body elements (XML elements and JSON string fields): any name containing
///   `signature`, `stringtosign`, `canonicalrequest`, `token`, `secret`, `password`,
///   `credential` or `accesskeyid` — S3 echoes `SignatureProvided` and `StringToSign` in
///   `SignatureDoesNotMatch`.
///
/// URLs print without userinfo (`user:password@`), with sensitive query values and any
/// fragment replaced by ``placeholder``.
public struct HTTPRedaction: Sendable, Hashable {
    /// What a hidden value prints as.
    public static let placeholder = "<REDACTED>"

    /// Exact header names (lowercase) whose values are credentials.
    public var sensitiveHeaderNames: Set<String>
    /// Substrings (lowercase) that make any header name sensitive.
    public var sensitiveHeaderMarkers: [String]
    /// Exact query parameter names (lowercase) whose values are credentials.
    public var sensitiveQueryNames: Set<String>
    /// Substrings (lowercase) that make any query parameter name sensitive.
    public var sensitiveQueryMarkers: [String]
    /// Substrings (lowercase) that make an XML element or JSON field in an error body sensitive.
    public var sensitiveBodyMarkers: [String]

    /// The rules described above.
    public static let `default` = HTTPRedaction(
        sensitiveHeaderNames: [
            "authorization", "proxy-authorization", "cookie", "set-cookie", "x-amz-security-token",
            "accesskey", "x-api-key", "x-auth-token", "x-amz-server-side-encryption-customer-key",
            "x-amz-copy-source-server-side-encryption-customer-key", "x-bz-server-side-encryption-customer-key",
        ],
        sensitiveHeaderMarkers: [
            "auth", "token", "secret", "password", "cookie", "credential", "signature", "api-key", "apikey",
            "accesskey", "access-key", "customer-key",
        ],
        sensitiveQueryNames: [
            "x-amz-signature", "x-amz-credential", "x-amz-security-token", "signature", "awsaccesskeyid",
            "x-goog-signature", "x-goog-credential", "token", "access_token", "authorization", "key", "api_key",
            "apikey", "sig", "password", "secret", "client_secret",
        ],
        sensitiveQueryMarkers: ["signature", "token", "secret", "password", "credential"],
        sensitiveBodyMarkers: [
            "signature", "stringtosign", "canonicalrequest", "token", "secret", "password", "credential", "accesskeyid",
        ])

    /// Creates a rule set; start from ``default`` and add names with ``adding(headers:queryParameters:)``
    /// rather than replacing the lists.
    public init(
        sensitiveHeaderNames: Set<String>, sensitiveHeaderMarkers: [String], sensitiveQueryNames: Set<String>,
        sensitiveQueryMarkers: [String], sensitiveBodyMarkers: [String]
    ) {
        self.sensitiveHeaderNames = Set(sensitiveHeaderNames.map { $0.lowercased() })
        self.sensitiveHeaderMarkers = sensitiveHeaderMarkers.map { $0.lowercased() }
        self.sensitiveQueryNames = Set(sensitiveQueryNames.map { $0.lowercased() })
        self.sensitiveQueryMarkers = sensitiveQueryMarkers.map { $0.lowercased() }
        self.sensitiveBodyMarkers = sensitiveBodyMarkers.map { $0.lowercased() }
    }

    /// A copy that also treats these header and query parameter names as credentials.
    public func adding(headers: [String] = [], queryParameters: [String] = []) -> HTTPRedaction {
        var copy = self
        copy.sensitiveHeaderNames.formUnion(headers.map { $0.lowercased() })
        copy.sensitiveQueryNames.formUnion(queryParameters.map { $0.lowercased() })
        return copy
    }

    /// Whether a header with this name carries a credential.
    public func isSensitiveHeader(_ name: String) -> Bool {
        let name = name.lowercased()
        return sensitiveHeaderNames.contains(name) || sensitiveHeaderMarkers.contains { name.contains($0) }
    }

    /// Whether a query parameter with this (percent-decoded) name carries a credential.
    public func isSensitiveQueryParameter(_ name: String) -> Bool {
        let name = name.lowercased()
        return sensitiveQueryNames.contains(name) || sensitiveQueryMarkers.contains { name.contains($0) }
    }
}
