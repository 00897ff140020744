import BuckiaCore
import Foundation

extension S3Provider {
    /// A URL that lets anyone holding it GET or PUT one object until it expires, with no other
    /// credentials (SigV4 query signing). A PUT must send the body with the same
    /// `Content-Type` it was signed for, if any.
    ///
    /// - Parameter expires: 1 second to 7 days.
    public func presignedURL(for key: ObjectKey, method: PresignedMethod, expires: Duration) throws -> URL {
        try signer.presignedURL(method: method.rawValue, url: url(for: key), expires: expires, date: now())
    }

    /// The object's plain URL, which fetches it without credentials only when the bucket is
    /// public (option `publicBucket`).
    public func getPublicURL(remotePath: ObjectKey) throws -> URL {
        guard settings.isPublic else {
            throw BuckiaError.unsupported(.publicURL, provider: .s3, operation: "getPublicURL")
        }
        return url(for: remotePath)
    }
}
