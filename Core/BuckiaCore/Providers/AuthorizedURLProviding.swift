import Foundation

/// A provider that hands out URLs reading one object for a while, where making one takes a
/// request to the backend (B2's download authorizations), which
/// ``StorageProvider/presignedURL(for:method:expires:)`` — synchronous, so that signing stays
/// local — cannot make.
///
/// `buckia url` uses it for a download when the provider does not presign.
public protocol AuthorizedURLProviding: StorageProvider {
    /// A URL that downloads `key` without other credentials until `expires` from now.
    func authorizedURL(for key: ObjectKey, expires: Duration) async throws -> URL
}
