import BuckiaCore
import Foundation

/// Tokens are `base64url(claims JSON) "." base64url(HMAC-SHA256(signingKey, claims))`.
extension MemoryProvider {
    struct TokenClaims: Codable {
        var sub: String?
        var perm: Int
        var prefix: String?
        var exp: Int64
    }

    public func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken {
        if let prefix = options.pathPrefix { try ObjectKey.validatePrefix(prefix) }
        let expiresAt = now().addingTimeInterval(TimeInterval(options.expiry.components.seconds))
        let claims = TokenClaims(
            sub: options.userId, perm: options.permissions.rawValue, prefix: options.pathPrefix,
            exp: Int64(expiresAt.timeIntervalSince1970.rounded(FloatingPointRoundingRule.down)))
        let payload = try JSONEncoder().encode(claims)
        let signature = HMAC.sha256(key: signingKey, message: payload)
        let token = Base64URL.encode(payload) + "." + Base64URL.encode(signature.data)
        return AccessToken(
            value: Secret(token), expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.exp)),
            permissions: options.permissions, pathPrefix: options.pathPrefix)
    }

    /// Checks a token this provider issued and returns what it grants.
    ///
    /// - Throws: ``BuckiaError/Code/unauthorized`` when the token is malformed, was altered
    ///   or signed with another key, or has expired.
    public func validateAccessToken(_ token: String) throws -> AccessToken {
        func reject(_ reason: String) -> BuckiaError {
            BuckiaError(.unauthorized, "The access token is not valid: \(reason).", operation: "validateAccessToken")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = Base64URL.decode(String(parts[0])),
              let signature = Base64URL.decode(String(parts[1]))
        else { throw reject("it is not two base64url parts") }
        let expected = HMAC.sha256(key: signingKey, message: payload)
        guard HMAC.constantTimeEquals(expected.bytes, [UInt8](signature)) else {
            throw reject("its signature does not match")
        }
        guard let claims = try? JSONValidation.decode(TokenClaims.self, from: payload, what: "The token") else {
            throw reject("its claims cannot be read")
        }
        let expiresAt = Date(timeIntervalSince1970: TimeInterval(claims.exp))
        guard expiresAt > now() else { throw reject("it expired at \(expiresAt)") }
        return AccessToken(
            value: Secret(token), expiresAt: expiresAt, permissions: StoragePermissions(rawValue: claims.perm),
            pathPrefix: claims.prefix)
    }
}
