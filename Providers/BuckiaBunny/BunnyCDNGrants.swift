import BuckiaCore
import BuckiaSecurity
import Foundation

/// A signed pull-zone URL for one read grant: the CDN refuses it elsewhere and after it expires.
public struct BunnyCDNGrant: Sendable, Hashable, CustomStringConvertible {
    /// The grant it holds.
    public var grant: StorageGrant
    /// For a folder, the path segment (`bcdn_token=…&token_path=…&expires=…`) to put first in
    /// any URL under it; for one object, its whole signed URL. A bearer credential: never printed.
    public var token: Secret
    /// When the CDN stops accepting it.
    public var expiresAt: Date

    public var description: String { "BunnyCDNGrant(\(grant), expires \(expiresAt.formatted(.iso8601)), <REDACTED>)" }
}

/// Bunny CDN tokens for Buckia read grants: a folder becomes a directory token (`token_path`),
/// one object a signed URL. The CDN serves reads only, so a grant that writes, deletes or lists
/// is inexpressible here; Bunny's storage API has one password per zone and no scoped keys.
public struct BunnyCDNGrantFactory: ScopedCredentialFactory {
    private let provider: BunnyProvider

    /// A factory over `provider`'s pull zone and token key.
    public init(provider: BunnyProvider) { self.provider = provider }

    public var backendName: String { "Bunny CDN tokens" }

    public func inexpressible(_ grants: StorageGrants) -> [InexpressibleGrant] {
        grants.grants.compactMap { grant in
            if KeyScreen.hasWildcard(grant.prefix) {
                return InexpressibleGrant(grant, "a directory token names one literal path; a * segment (any folder) needs a Buckia token and the gateway")
            }
            return grant.permissions == .read
                ? nil : InexpressibleGrant(grant, "the CDN serves reads only; writing, deleting and listing need the zone's password, which cannot be scoped")
        }
    }

    public func credentials(for grants: StorageGrants, userId: String, expiry: Duration) async throws -> [BunnyCDNGrant] {
        try checkExpressible(grants)
        guard let tokenKey = provider.settings.tokenKey else {
            throw BuckiaError.unsupported(.accessToken, provider: .bunny, operation: "scoped credentials")
        }
        let factory = BunnyTokenFactory(securityKey: tokenKey)
        let now = provider.now()
        var tokens: [BunnyCDNGrant] = []
        for grant in grants.grants {
            if grant.prefix.isEmpty || grant.prefix.hasSuffix("/") {
                let token = try factory.directoryToken(
                    AccessTokenOptions(permissions: .read, expiry: expiry, pathPrefix: grant.prefix), scheme: provider.settings.tokenScheme, now: now,
                    operation: "scoped credentials")
                tokens.append(BunnyCDNGrant(grant: grant, token: token.value, expiresAt: token.expiresAt))
            } else {
                let expires = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + Double(expiry.components.seconds)).rounded(.down))
                let url = try provider.signedURL(for: try ObjectKey(grant.prefix), BunnySigningOptions(scheme: provider.settings.tokenScheme, expires: expires))
                tokens.append(BunnyCDNGrant(grant: grant, token: Secret(url.absoluteString), expiresAt: expires))
            }
        }
        return tokens
    }
}
