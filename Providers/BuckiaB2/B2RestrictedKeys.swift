import BuckiaCore
import BuckiaSecurity
import Foundation

/// A restricted B2 application key made for one grant: B2 itself refuses whatever else it tries.
public struct B2RestrictedKey: Sendable, Hashable, CustomStringConvertible {
    /// The key's id (`applicationKeyId`), the user name of a B2 login.
    public var applicationKeyId: String
    /// The key itself; B2 shows it once, at creation.
    public var applicationKey: Secret
    /// The grant it holds.
    public var grant: StorageGrant
    /// B2's capabilities it was given.
    public var capabilities: [String]
    /// When B2 stops accepting it.
    public var expiresAt: Date?

    public var description: String {
        "B2RestrictedKey(\(applicationKeyId), \(grant), capabilities: \(capabilities.joined(separator: ",")), <REDACTED>)"
    }

    /// The credentials a b2 remote authenticates with: `.providerSpecific(type: .b2, …)`.
    public var authentication: AuthenticationConfiguration {
        .providerSpecific(type: .b2, credentials: ["applicationKeyId": applicationKeyId, "applicationKey": applicationKey.exposedValue])
    }
}

/// Restricted B2 application keys (`b2_create_key`) for Buckia grants: one key per grant,
/// limited to the remote's bucket, the grant's prefix, the grant's capabilities and an expiry.
///
/// B2 allows one name prefix a key, and compares it by bytes, so a grant on a folder
/// (`u1/`) maps exactly, while a grant on one object (`docs/readme.txt`) would also open
/// `docs/readme.txt2` and is refused as inexpressible. The provider's own key needs B2's
/// `writeKeys` capability. `b2_create_key` is not idempotent: a call retried after a lost
/// answer may leave an extra key behind, which expires with the others.
public struct B2RestrictedKeyFactory: ScopedCredentialFactory {
    private let provider: B2Provider

    /// A factory over `provider`'s account and bucket.
    public init(provider: B2Provider) { self.provider = provider }

    public var backendName: String { "B2" }

    /// B2's capability for each operation. Every key also gets `listBuckets`, with which a
    /// client finds its bucket by name.
    static let capabilities: [(StoragePermissions, String)] = [(.read, "readFiles"), (.list, "listFiles"), (.write, "writeFiles"), (.delete, "deleteFiles")]

    public func inexpressible(_ grants: StorageGrants) -> [InexpressibleGrant] {
        grants.grants.compactMap { grant in
            if grant.permissions.contains(.deliver), !grant.permissions.contains(.write) {
                return InexpressibleGrant(
                    grant,
                    "B2's writeFiles also uploads over an existing name (a new version that hides the old) and bounds neither size nor name; deliver needs a Buckia token and the gateway")
            }
            if KeyScreen.hasWildcard(grant.prefix) {
                return InexpressibleGrant(grant, "a B2 key has one literal name prefix; a * segment (any folder) needs a Buckia token and the gateway")
            }
            if !grant.prefix.isEmpty, !grant.prefix.hasSuffix("/") {
                return InexpressibleGrant(grant, "B2 compares a key's name prefix by bytes, so it would also open every name that starts with \(grant.prefix.debugDescription); grant a folder (ending in /)")
            }
            return nil
        }
    }

    public func credentials(for grants: StorageGrants, userId: String, expiry: Duration) async throws -> [B2RestrictedKey] {
        try checkExpressible(grants)
        let seconds = expiry.components.seconds
        guard seconds >= 1, seconds < 1000 * 86_400 else {
            throw BuckiaError(.invalidConfiguration, "A B2 key lasts 1 second to under 1000 days; \(expiry) is outside that.", operation: "b2_create_key")
        }
        let account = try await provider.session.account()
        let bucketId = try await provider.bucketId()
        let name = Self.keyName(for: userId)
        var keys: [B2RestrictedKey] = []
        for grant in grants.grants {
            let capabilities = ["listBuckets"] + Self.capabilities.filter { grant.permissions.contains($0.0) }.map(\.1)
            var fields: [String: any Sendable] = [
                "accountId": account.accountId, "capabilities": capabilities, "keyName": name, "bucketId": bucketId, "validDurationInSeconds": seconds,
            ]
            if !grant.prefix.isEmpty { fields["namePrefix"] = grant.prefix }
            let created = try await provider.api("b2_create_key", fields, as: B2API.CreatedKey.self, operation: "b2_create_key", path: grant.prefix)
            keys.append(
                B2RestrictedKey(
                    applicationKeyId: created.applicationKeyId, applicationKey: Secret(created.applicationKey), grant: grant, capabilities: created.capabilities,
                    expiresAt: created.expirationTimestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) }))
        }
        return keys
    }

    /// Deletes a key this factory made (`b2_delete_key`), before it expires.
    public func delete(_ key: B2RestrictedKey) async throws {
        _ = try await provider.api("b2_delete_key", ["applicationKeyId": key.applicationKeyId], operation: "b2_delete_key")
    }

    /// `buckia-<user>`, with every character B2 refuses in a key name (letters, digits and `-`
    /// only, 100 at most) turned into `-`.
    static func keyName(for userId: String) -> String {
        let cleaned = userId.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "-") ? Character(scalar) : "-"
        }
        return String(("buckia-" + String(cleaned)).prefix(100))
    }
}
