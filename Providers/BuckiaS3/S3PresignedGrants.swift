import BuckiaCore
import BuckiaSecurity
import Foundation

/// A presigned URL for one object and one method: S3 itself refuses anything else.
public struct S3PresignedGrant: Sendable, Hashable, CustomStringConvertible {
    /// The object.
    public var key: ObjectKey
    /// GET (read) or PUT (write).
    public var method: PresignedMethod
    /// The URL; a bearer credential until it expires, so it never prints.
    public var url: Secret
    /// When S3 stops accepting it.
    public var expiresAt: Date

    public var description: String { "S3PresignedGrant(\(method.rawValue) \(key), expires \(expiresAt.formatted(.iso8601)), <REDACTED>)" }
}

/// Presigned URLs for Buckia grants: a grant on one object (no trailing slash) with read, write
/// or both becomes one URL per method.
///
/// S3 has no prefix-scoped bearer credential without STS, so a grant on a folder, or one that
/// lists or deletes, is inexpressible here; such grants need a Buckia user token and a server
/// (or gateway) that checks it.
public struct S3PresignedGrantFactory: ScopedCredentialFactory {
    private let provider: S3Provider

    /// A factory over `provider`'s bucket and credentials.
    public init(provider: S3Provider) { self.provider = provider }

    public var backendName: String { "S3 presigned URLs" }

    public func inexpressible(_ grants: StorageGrants) -> [InexpressibleGrant] {
        grants.grants.compactMap { grant in
            if grant.prefix.isEmpty || grant.prefix.hasSuffix("/") {
                return InexpressibleGrant(grant, "a presigned URL opens one object; a folder needs STS or a Buckia token")
            }
            if KeyScreen.hasWildcard(grant.prefix) {
                return InexpressibleGrant(grant, "a presigned URL names one object; a * segment (any folder) needs a Buckia token and the gateway")
            }
            if grant.permissions.contains(.deliver), !grant.permissions.contains(.write) {
                return InexpressibleGrant(grant, "a presigned URL opens one named object, and a delivery's name is not known in advance; deliver needs a Buckia token and the gateway")
            }
            if !StoragePermissions([.read, .write]).isSuperset(of: grant.permissions.subtracting(.deliver)) {
                return InexpressibleGrant(grant, "a presigned URL reads or writes one object; it cannot list or delete")
            }
            return nil
        }
    }

    public func credentials(for grants: StorageGrants, userId: String, expiry: Duration) async throws -> [S3PresignedGrant] {
        try checkExpressible(grants)
        var urls: [S3PresignedGrant] = []
        for grant in grants.grants {
            let key = try ObjectKey(grant.prefix)
            for (permission, method) in [(StoragePermissions.read, PresignedMethod.get), (.write, .put)] where grant.permissions.contains(permission) {
                let url = try provider.presignedURL(for: key, method: method, expires: expiry)
                urls.append(
                    S3PresignedGrant(key: key, method: method, url: Secret(url.absoluteString), expiresAt: provider.now().addingTimeInterval(Double(expiry.components.seconds))))
            }
        }
        return urls
    }
}
