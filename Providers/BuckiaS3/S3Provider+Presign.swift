import BuckiaCore
import Foundation

extension S3Provider {
    /// A URL that lets anyone holding it GET or PUT one object until it expires, with no other
    /// credentials (SigV4 query signing). A PUT must send the body with the same
    /// `Content-Type` it was signed for, if any.
    ///
    /// - Parameter expires: 1 second to 7 days.
    public func presignedURL(for key: ObjectKey, method: PresignedMethod, expires: Duration) throws -> URL {
        guard let signer else {
            throw BuckiaError(
                .unsupported, "Presigned URLs need fixed credentials; this S3 remote's come from a login and are renewed as it goes.",
                operation: "presign", path: key.rawValue)
        }
        return try signer.presignedURL(method: method.rawValue, url: try url(for: key), expires: expires, date: now())
    }

    /// The object's plain URL, which fetches it without credentials only when the bucket is
    /// public (option `publicBucket`).
    public func getPublicURL(remotePath: ObjectKey) throws -> URL {
        guard settings.isPublic else {
            throw BuckiaError.unsupported(.publicURL, provider: .s3, operation: "getPublicURL")
        }
        return try url(for: remotePath)
    }
}

extension S3Provider {
    /// A token for one object: a presigned URL that reads it (`.read`) or writes it (`.write`)
    /// until `expiry`. `pathPrefix` (or provider option `key`) names the object.
    ///
    /// S3 has no prefix-scoped bearer tokens without STS, so a prefix ending in `/`, or
    /// permissions beyond one read or one write, throw ``BuckiaCore/BuckiaError/Code/unsupported``;
    /// the provider does not declare ``BuckiaCore/Capability/accessToken`` for that reason.
    public func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken {
        guard let name = options.providerOptions["key"] ?? options.pathPrefix, !name.hasSuffix("/") else {
            throw BuckiaError(
                .unsupported,
                "S3 tokens are presigned URLs for one object; name the object in pathPrefix. Prefix-scoped tokens need STS, which this provider does not use.",
                operation: "generateAccessToken")
        }
        let method: PresignedMethod
        switch options.permissions {
        case .read, .readOnly: method = .get
        case .write: method = .put
        default:
            throw BuckiaError(.unsupported, "An S3 token allows one read or one write of one object.", operation: "generateAccessToken")
        }
        let url = try presignedURL(for: ObjectKey(name), method: method, expires: options.expiry)
        return AccessToken(
            value: Secret(url.absoluteString), expiresAt: now().addingTimeInterval(TimeInterval(options.expiry.components.seconds)),
            permissions: options.permissions, pathPrefix: name)
    }
}
