import BuckiaCore
import BuckiaHTTP
import Foundation

/// The account authorization a B2 provider works under, and the bucket it resolved.
///
/// One authorization serves every request of the provider, concurrent ones included, for as
/// long as B2 accepts it (a day). When a request is refused with `expired_auth_token`, the
/// next attempt asks for a renewal naming the token that was refused: the first such request
/// authorizes again, and every other one that saw the same token gets the new authorization
/// without another call. Concurrent first requests share one `b2_authorize_account` too.
actor B2Session {
    /// What `b2_authorize_account` granted.
    struct Account: Sendable {
        let accountId: String
        let token: Secret
        let apiURL: URL
        let downloadURL: URL
        let allowedBucketId: String?
        let allowedBucketName: String?
        let namePrefix: String?
        let minimumPartSize: Int64
    }

    /// The bucket, once resolved.
    struct Bucket: Sendable {
        let id: String
        let isPublic: Bool
    }

    private let settings: B2Settings
    private let client: HTTPClient
    private var account: Account?
    private var authorizing: Task<Account, any Error>?
    private var bucket: Bucket?
    private var resolving: Task<Bucket, any Error>?
    /// How many times the account was authorized (the first time included).
    private(set) var authorizations = 0
    /// The download host of the last authorization, readable without waiting (for
    /// ``B2Provider/getPublicURL(remotePath:)``, which cannot wait).
    nonisolated let lastDownloadURL = Locked<URL?>(nil)

    init(settings: B2Settings, client: HTTPClient) {
        self.settings = settings
        self.client = client
    }

    /// The current authorization, made now if there is none. With `refused`, the token a
    /// request was just refused with: a new authorization replaces it unless one already has.
    func account(replacing refused: Secret? = nil) async throws -> Account {
        if let account, account.token != refused { return account }
        if let authorizing { return try await authorizing.value }
        let task = Task { try await Self.authorize(settings, client) }
        authorizing = task
        defer { authorizing = nil }
        let granted = try await task.value
        account = granted
        authorizations += 1
        lastDownloadURL.withLock { $0 = granted.downloadURL }
        return granted
    }

    /// The bucket's id and whether it is public: from the authorization when the key is
    /// restricted to it, otherwise from `b2_list_buckets`.
    func bucket(using api: @escaping @Sendable (String, [String: any Sendable]) async throws -> Data) async throws -> Bucket {
        if let bucket { return bucket }
        if let resolving { return try await resolving.value }
        // Set before any wait, so concurrent first callers share this one task.
        let settings = settings
        let task = Task { () throws -> Bucket in
            let account = try await self.account()
            if let allowed = account.allowedBucketId, let name = account.allowedBucketName {
                guard name == settings.bucket else {
                    throw BuckiaError(
                        .permissionDenied, "The application key \(settings.keyId) is restricted to the bucket \(name), not \(settings.bucket).",
                        operation: "authorize", path: settings.bucket)
                }
                return Bucket(id: allowed, isPublic: settings.isPublic)
            }
            let data = try await api("b2_list_buckets", ["accountId": account.accountId, "bucketName": settings.bucket])
            let buckets = try B2API.decode(B2API.Buckets.self, from: data, call: "b2_list_buckets").buckets
            guard let found = buckets.first(where: { $0.bucketName == settings.bucket }) else {
                throw BuckiaError(
                    .notFound, "The account has no bucket named \(settings.bucket) that the application key \(settings.keyId) can see.",
                    operation: "authorize", path: settings.bucket)
            }
            return Bucket(id: found.bucketId, isPublic: settings.isPublic || found.bucketType == "allPublic")
        }
        resolving = task
        defer { resolving = nil }
        let resolved = try await task.value
        bucket = resolved
        return resolved
    }

    /// `b2_authorize_account` (version 3) with the key as Basic credentials.
    private static func authorize(_ settings: B2Settings, _ client: HTTPClient) async throws -> Account {
        let url = settings.endpoint.appendingPathComponent("b2api/v3/b2_authorize_account")
        let basic = Data("\(settings.keyId):\(settings.applicationKey.exposedValue)".utf8).base64EncodedString()
        var request = HTTPRequest(.get, url)
        request.headers.set("Authorization", secret: Secret("Basic " + basic))
        let response: HTTPResponse
        do {
            response = try await client.send(request)
        } catch let error as BuckiaError where error.code == .permissionDenied || error.code == .unauthorized {
            throw BuckiaError(
                .unauthorized, "B2 refused the application key \(settings.keyId): check the key id and key, and that the key has not been deleted.",
                operation: "authorize", cause: error)
        } catch {
            throw BuckiaError.wrapping(error, operation: "authorize")
        }
        return try account(answer: response.data, settings: settings)
    }

    /// The account a b2_authorize_account answer grants, checked: usable URLs that do not
    /// lead from https to http, and a token.
    static func account(answer data: Data, settings: B2Settings) throws -> Account {
        let granted = try B2API.decode(B2API.Authorization.self, from: data, call: "b2_authorize_account")
        let storage = granted.apiInfo.storageApi
        guard let apiURL = URL(string: storage.apiUrl), apiURL.host != nil, let downloadURL = URL(string: storage.downloadUrl), downloadURL.host != nil else {
            throw BuckiaError(.corrupt, "B2's authorization names no usable API or download URL.", operation: "authorize")
        }
        try checkServerURL(apiURL, settings: settings, what: "API URL")
        try checkServerURL(downloadURL, settings: settings, what: "download URL")
        guard !granted.authorizationToken.isEmpty else {
            throw BuckiaError(.corrupt, "B2's authorization carries no token.", operation: "authorize")
        }
        return Account(
            accountId: granted.accountId, token: Secret(granted.authorizationToken), apiURL: apiURL,
            downloadURL: settings.downloadURL ?? downloadURL, allowedBucketId: storage.bucketId, allowedBucketName: storage.bucketName,
            namePrefix: storage.namePrefix, minimumPartSize: max(1, storage.absoluteMinimumPartSize ?? 5_000_000))
    }
}

/// Refuses a URL the server handed out (API, download or upload host) that would send
/// credentials in clear text when the configured endpoint does not: an `https` endpoint must
/// lead only to `https` hosts.
func checkServerURL(_ url: URL, settings: B2Settings, what: String) throws {
    let secure = settings.endpoint.scheme?.lowercased() == "https"
    guard !secure || url.scheme?.lowercased() == "https" else {
        throw BuckiaError(
            .corrupt, "B2 named a plain-http \(what) (\(url.host ?? "")) though the endpoint is https; the request was not sent.",
            operation: "authorize")
    }
}
