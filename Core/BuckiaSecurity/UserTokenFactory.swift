import BuckiaCore
import Foundation

/// Buckia user tokens behind the seed's `TokenFactory` protocol, for code written against it:
/// an issuer and a verifier over one signing key.
///
/// ``TokenFactory/generateToken(options:)`` grants `options.permissions` on
/// `options.pathPrefix` (everything when nil) to `options.userId`; for several grants in one
/// token use ``generateToken(userId:grants:expiry:)``.
public struct UserTokenFactory: TokenFactory {
    private let issuer: UserTokenIssuer
    private let verifier: UserTokenVerifier

    /// A factory signing and checking with `key`.
    public init(key: UserTokenSigningKey, audience: String = "buckia", clock: @escaping @Sendable () -> Date = { Date() }) throws {
        issuer = UserTokenIssuer(key: key, audience: audience, clock: clock)
        verifier = try UserTokenVerifier(keys: [try key.verificationKey()], audience: audience, clock: clock)
    }

    /// A token for `userId` with `grants`.
    public func generateToken(userId: String, grants: StorageGrants, expiry: Duration) throws -> AccessToken {
        let issued = try issuer.issue(userId: userId, grants: grants, lifetime: expiry)
        let union = grants.grants.reduce(StoragePermissions()) { $0.union($1.permissions) }
        let prefix = grants.grants.count == 1 ? grants.grants[0].prefix : nil
        return AccessToken(value: issued.token, expiresAt: issued.claims.expiresAt, permissions: union, pathPrefix: prefix)
    }

    public func generateToken(options: AccessTokenOptions) throws -> AccessToken {
        guard let userId = options.userId else {
            throw BuckiaError(.invalidConfiguration, "A Buckia user token is for a user: set AccessTokenOptions.userId.")
        }
        return try generateToken(userId: userId, grants: [StorageGrant(options.permissions, prefix: options.pathPrefix ?? "")], expiry: options.expiry)
    }

    /// Whether `token` verifies now. A refusal of any kind is `false`; ``verifier`` says why.
    public func validateToken(_ token: String) throws -> Bool {
        do {
            _ = try verifier.verify(token)
            return true
        } catch {
            return false
        }
    }

    /// What `token` says, unverified: its expiry, the union of its permissions, its one prefix
    /// (nil when it has several grants), and `sub`, `kid`, `jti` and `grants` as attributes.
    public func parseToken(_ token: String) throws -> TokenMetadata {
        let (_, keyId, claims) = try UserTokenVerifier.inspect(token)
        let union = claims.grants.grants.reduce(StoragePermissions()) { $0.union($1.permissions) }
        return TokenMetadata(
            expiresAt: claims.expiresAt, permissions: union, pathPrefix: claims.grants.grants.count == 1 ? claims.grants.grants[0].prefix : nil,
            attributes: ["sub": claims.subject, "kid": keyId, "jti": claims.tokenId, "grants": claims.grants.description])
    }

    /// The verifier behind ``validateToken(_:)``, for the reason a token is refused.
    public var tokenVerifier: UserTokenVerifier { verifier }
}
