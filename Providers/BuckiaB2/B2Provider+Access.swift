import BuckiaCore
import BuckiaHTTP
import Foundation

extension B2Provider {
    /// The file's download URL on the account's download host, which fetches it without
    /// credentials only when the bucket is public (option `publicBucket`, or a bucket B2 lists
    /// as `allPublic`).
    ///
    /// The host comes from option `downloadURL` or from the account's authorization; this call
    /// cannot wait for one, so without the option it throws until the provider has made its
    /// first request. For a private bucket, ``authorizedURL(for:expires:)`` makes a URL that
    /// carries a download token.
    public func getPublicURL(remotePath: ObjectKey) throws -> URL {
        guard settings.isPublic else {
            throw BuckiaError.unsupported(.publicURL, provider: .b2, operation: "getPublicURL")
        }
        try Self.check(remotePath, operation: "getPublicURL")
        guard let base = settings.downloadURL ?? session.lastDownloadURL.withLock({ $0 }) else {
            throw BuckiaError(
                .invalidConfiguration,
                "The B2 download host is not known yet: set option downloadURL (such as https://f003.backblazeb2.com), or make a request (testConnection) first.",
                operation: "getPublicURL", path: remotePath.rawValue)
        }
        return try downloadURL(base: base, key: remotePath)
    }

    /// A URL that downloads one file of a private bucket without other credentials until it
    /// expires: the download URL with a download-authorization token for the file's name.
    ///
    /// B2 scopes such tokens by name prefix, not exact name: the token in a URL for `report`
    /// also opens `report-2.pdf` and `report/…`. Give files that are shared this way names no
    /// other file's name starts with (a unique suffix, an extension).
    ///
    /// - Parameter expires: 1 second to 7 days (B2's limits).
    public func authorizedURL(for key: ObjectKey, expires: Duration) async throws -> URL {
        try Self.check(key, operation: "authorizedURL")
        let token = try await downloadAuthorization(prefix: key.rawValue, expires: expires, operation: "authorizedURL")
        let account = try await session.account()
        let url = try downloadURL(base: account.downloadURL, key: key)
        // Never the URL without its token: that would fail later, as a refusal, far from here.
        guard let authorized = URL(string: url.absoluteString + "?Authorization=" + b2Encode(token.exposedValue)) else {
            throw BuckiaError(.invalidPath, "No authorized URL can address \(key.rawValue.debugDescription).", operation: "authorizedURL", path: key.rawValue)
        }
        return authorized
    }

    /// A download token (b2_get_download_authorization) for the names that start with
    /// `pathPrefix` (the whole bucket when nil), valid until `expiry`. It grants reading only:
    /// asking for other permissions throws ``BuckiaCore/BuckiaError/Code/unsupported``.
    /// Send it as the `Authorization` header or the `Authorization` query parameter of
    /// `{downloadURL}/file/{bucket}/{name}`.
    public func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken {
        guard options.permissions.subtracting(.readOnly).isEmpty else {
            throw BuckiaError(
                .unsupported, "B2 download tokens grant reading only; ask for .readOnly permissions.", operation: "generateAccessToken")
        }
        let issued = now()
        let token = try await downloadAuthorization(prefix: options.pathPrefix ?? "", expires: options.expiry, operation: "generateAccessToken")
        let seconds = Self.seconds(options.expiry)
        return AccessToken(value: token, expiresAt: issued.addingTimeInterval(Double(seconds)), permissions: .readOnly, pathPrefix: options.pathPrefix)
    }

    private func downloadAuthorization(prefix: String, expires: Duration, operation: String) async throws -> Secret {
        let seconds = Self.seconds(expires)
        guard (1...604_800).contains(seconds) else {
            throw BuckiaError(.invalidConfiguration, "B2 download tokens last 1 second to 7 days; \(expires) is outside that.", operation: operation)
        }
        let answer = try await api(
            "b2_get_download_authorization", ["bucketId": try await bucketId(), "fileNamePrefix": prefix, "validDurationInSeconds": seconds],
            as: B2API.DownloadAuthorization.self, operation: operation, path: prefix)
        return Secret(answer.authorizationToken)
    }

    /// Whole seconds of a duration, rounded down, without trapping on huge values.
    static func seconds(_ duration: Duration) -> Int64 {
        duration.components.seconds
    }
}
