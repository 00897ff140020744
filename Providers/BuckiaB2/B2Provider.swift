import BuckiaCore
import BuckiaHTTP
import Foundation

/// A provider for Backblaze B2 on its native API (version 3).
///
/// The account is authorized once with the application key and the authorization shared by
/// every request until B2 says it expired; then the next attempt authorizes again, once for
/// all the requests that saw it expire. Every upload, and every part of a large file, takes an
/// upload URL of its own from a pool: an upload URL is never used by two uploads at once, and
/// one that failed (a 5xx, a timeout, a broken connection, an expired upload token) is dropped
/// and the retry fetches a new one, as Backblaze's integration checklist asks.
///
/// Integrity: every upload carries its SHA-1 (`X-Bz-Content-Sha1`), which B2 checks before
/// storing; a large file's parts carry theirs, and its whole SHA-1 is kept in the file info
/// `large_file_sha1` (the `b2` tool's and rclone's convention). Downloads of whole files are
/// checked against the SHA-1 as they arrive. The modification time is the file info
/// `src_last_modified_millis`, so rclone and the `b2` tool read what Buckia wrote.
///
/// Deleting a name deletes every version of it (B2 keeps versions; a deleted file is gone, not
/// hidden). Files at least ``B2Settings/largeFileThreshold`` long go up as large files, parts
/// in parallel, from the file in place (memory does not grow with the file), and a large file
/// whose upload was killed is resumed by the next upload of the same bytes to the same name:
/// B2's own list of unfinished large files and their parts says what is already there.
///
/// Configuration: `bucketName`, and the options and sources in ``B2Settings``.
public struct B2Provider: StorageProviderPlugin {
    public static let providerType: ProviderType = .b2

    /// The resolved connection settings.
    public let settings: B2Settings
    let client: HTTPClient
    /// The budget streamed uploads' parts share with every provider of the same resources.
    let partMemory: UploadMemory
    let session: B2Session
    let uploadURLs: B2UploadURLPool
    let counters = Locked(B2Statistics())
    let now: @Sendable () -> Date

    public var capabilities: ProviderCapabilities {
        var features: Set<Capability> = [
            .readWithRange, .listStartAfter, .pagedListing, .streamingTransfers, .multipartUpload, .serverSideCopy,
            .preservesModificationTime, .persistent, .userMetadata, .contentHeaders, .setModificationTime, .resumableListing, .accessToken,
            .verifiesKnownChecksums, .streamingUploads,
        ]
        features.formUnion([.authorizedURL, .unfinishedUploads, .partUploads])
        if settings.isPublic { features.insert(.publicURL) }
        return ProviderCapabilities(
            features: features, checksums: [.sha1: .listing],
            listedFields: [.modificationDate, .serverModified, .etag, .contentType, .metadata],
            // The account's minimum part size raises this where it is larger (real B2: 5 MB).
            modificationTimePrecision: .milliseconds(1), maxListPageSize: 1000, uploadPartSize: settings.partSize)
    }

    public static var knownOptions: Set<String>? { B2Settings.knownOptions }

    public init(context: ProviderContext) throws {
        try self.init(
            settings: B2Settings.resolve(context.configuration, environment: context.environment), log: context.log,
            resources: context.resources)
    }

    /// Creates a provider from a configuration, reading the process's environment.
    public init(configuration: BuckiaConfiguration) throws {
        try self.init(settings: B2Settings.resolve(configuration))
    }

    /// Creates a provider from resolved settings, with an injectable clock (modification times
    /// of data uploads, token expiry), an optional log that receives one redacted line per HTTP
    /// attempt, and the HTTP transport (the shared one of `resources` when nil) with its retry policy.
    public init(
        settings: B2Settings, now: @escaping @Sendable () -> Date = { Date() }, log: (@Sendable (String) -> Void)? = nil,
        transport: (any HTTPTransport)? = nil, retryPolicy: RetryPolicy = .standard, resources: SharedResources = .process
    ) {
        self.settings = settings
        self.now = now
        var configuration = HTTPClient.Configuration(maximumConnectionsPerHost: max(6, settings.concurrency * 2), userAgent: BuckiaVersion.userAgent(component: "B2"))
        configuration.mapFailure = { B2ErrorMapping.map($0) }
        configuration.log = log
        configuration.retryPolicy = retryPolicy
        settings.http.apply(to: &configuration)
        client = HTTPClient(configuration: configuration, transport: transport, resources: resources)
        session = B2Session(settings: settings, client: client)
        uploadURLs = B2UploadURLPool()
        do {
            partMemory = try resources.resource(SharedUploadMemory.self)
        } catch {
            // Resources already shut down: the transport fails every request with why, so
            // no upload will hold a part; a budget of its own keeps the type whole.
            partMemory = UploadMemory()
        }
    }

    /// What this provider has done to keep going: authorizations, upload URLs fetched and
    /// renewed after a failure, attempts retried.
    public func statistics() async -> B2Statistics {
        var statistics = counters.withLock { $0 }
        statistics.authorizations = await session.authorizations
        return statistics
    }

    public func testConnection() async throws -> ConnectionStatus {
        let start = ContinuousClock.now
        do {
            // A key restricted to a name prefix may list only under it.
            let prefix = try await session.account().namePrefix ?? ""
            _ = try await fileNames(prefix: prefix, delimiter: nil, start: nil, count: 1)
            return ConnectionStatus(
                isConnected: true, message: "Bucket \(settings.bucket) answers at \(settings.endpoint.host ?? "").", latency: ContinuousClock.now - start)
        } catch let error as BuckiaError {
            return ConnectionStatus(isConnected: false, message: error.description, latency: ContinuousClock.now - start)
        }
    }

    // MARK: Calls

    /// Calls a B2 API operation with a JSON body and returns the answer's bytes. Each attempt
    /// carries the current authorization; one that follows an `expired_auth_token` refusal
    /// authorizes again first.
    func api(_ call: String, _ fields: [String: any Sendable], operation: String, path: String? = nil) async throws -> Data {
        let body: Data
        do {
            body = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        } catch {
            throw BuckiaError(.invalidConfiguration, "The \(call) request could not be encoded as JSON.", operation: operation, path: path, cause: error)
        }
        let used = Locked<Secret?>(nil)
        do {
            let response = try await client.send(interpret: { $0 }) { attempt in
                let account = try await self.account(for: attempt, used: used)
                var request = HTTPRequest(.post, account.apiURL.appendingPathComponent("b2api/v3/\(call)"), body: .data(body))
                request.headers.set("Authorization", secret: account.token)
                request.headers.set("Content-Type", "application/json")
                return request
            }
            return response.data
        } catch {
            throw BuckiaError.wrapping(error, operation: operation, path: path)
        }
    }

    /// The authorization for one attempt of a request: the current one, or a new one when the
    /// previous attempt was refused with the token it carried (`used`, which this updates).
    func account(for attempt: HTTPAttempt, used: Locked<Secret?>) async throws -> B2Session.Account {
        if attempt.number > 1 { counters.withLock { $0.retries += 1 } }
        let refused = B2ErrorMapping.refusedAuthorization(attempt.previousError) ? used.withLock { $0 } : nil
        let account = try await session.account(replacing: refused)
        used.withLock { $0 = account.token }
        return account
    }

    /// ``api(_:_:operation:path:)`` decoded.
    func api<T: Decodable>(_ call: String, _ fields: [String: any Sendable], as type: T.Type, operation: String, path: String? = nil) async throws -> T {
        try B2API.decode(type, from: try await api(call, fields, operation: operation, path: path), call: call)
    }

    /// The bucket's id, resolved once.
    func bucketId() async throws -> String {
        let provider = self
        return try await session.bucket { call, fields in try await provider.api(call, fields, operation: "authorize") }.id
    }

    /// Refuses names B2 would refuse, before any request: at most 1024 bytes of UTF-8, no
    /// control characters or DEL.
    static func check(_ key: ObjectKey, operation: String) throws {
        let bytes = key.rawValue.utf8
        guard bytes.count <= 1024 else {
            throw BuckiaError(.invalidPath, "B2 file names are at most 1024 bytes of UTF-8; this one has \(bytes.count).", operation: operation, path: key.rawValue)
        }
        guard !bytes.contains(where: { $0 < 32 || $0 == 127 }) else {
            throw BuckiaError(.invalidPath, "B2 file names may not contain control characters or DEL.", operation: operation, path: key.rawValue)
        }
    }

    /// A file as B2 describes it, in the provider contract's terms.
    static func remoteFile(_ key: ObjectKey, _ file: B2API.File) -> RemoteFile {
        let info = file.fileInfo ?? [:]
        return RemoteFile(
            path: key, size: file.contentLength ?? 0, modificationDate: info[modificationTimeInfo].flatMap(parseMillis),
            serverModified: file.uploadTimestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            checksums: sha1(declared: file.contentSha1, info: info).map { [.sha1: $0] } ?? [:], contentType: file.contentType,
            etag: file.fileId, metadata: userMetadata(info), contentHeaders: contentHeaders(info))
    }

    /// The SHA-1 B2 declares for a file: its `contentSha1` (B2 checked it unless marked
    /// `unverified:`), or for a large file the `large_file_sha1` its uploader recorded.
    static func sha1(declared: String?, info: [String: String]) -> String? {
        for candidate in [declared, info[largeFileSHA1Info]] {
            guard var value = candidate?.lowercased() else { continue }
            if value.hasPrefix("unverified:") { value.removeFirst("unverified:".count) }
            if Hex.isDigest(value, length: 20) { return value }
        }
        return nil
    }

    /// File info that is the user's metadata: everything but the entries B2 tools reserve.
    static func userMetadata(_ info: [String: String]) -> [String: String] {
        info.filter { !reservedInfo.contains($0.key) && !$0.key.hasPrefix("b2-") }
    }

    /// The content headers B2 keeps in file info as `b2-cache-control` and the like.
    static func contentHeaders(_ info: [String: String]) -> ContentHeaders {
        var headers = ContentHeaders()
        for name in ContentHeaders.names { headers[name] = info["b2-" + name] }
        return headers
    }

    /// File-info names the provider writes itself; user metadata may not use them.
    static let reservedInfo: Set<String> = [modificationTimeInfo, largeFileSHA1Info]

    static func parseMillis(_ text: String) -> Date? {
        Int64(text).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    static func millis(_ date: Date) -> String {
        String(Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
    }
}

/// What a B2 provider did to keep going, for logs and for the fault tests.
public struct B2Statistics: Sendable, Hashable, CustomStringConvertible {
    /// `b2_authorize_account` calls that succeeded (the first one included).
    public var authorizations = 0
    /// Upload URLs fetched (`b2_get_upload_url` and `b2_get_upload_part_url`).
    public var uploadURLsFetched = 0
    /// Upload URLs dropped after a failed attempt and replaced.
    public var uploadURLRenewals = 0
    /// Attempts after the first, over every request.
    public var retries = 0

    public var description: String {
        "\(retries) retries, \(authorizations) authorizations, \(uploadURLsFetched) upload URLs fetched (\(uploadURLRenewals) after a failure)"
    }
}

/// Upload URLs not in use, for reuse: B2 lets one upload at a time use an upload URL, and
/// fetching one per upload costs a request each.
actor B2UploadURLPool {
    struct Target: Sendable {
        let url: URL
        let token: Secret
    }

    private var idle: [String: [Target]] = [:]

    /// An idle URL for `scope` (a bucket, or a large file's id), or nil.
    func take(_ scope: String) -> Target? {
        idle[scope]?.popLast()
    }

    /// Returns a URL that served an upload successfully, for the next one.
    func giveBack(_ target: Target, scope: String) {
        idle[scope, default: []].append(target)
    }

    /// Forgets the URLs of a finished large file.
    func forget(_ scope: String) {
        idle[scope] = nil
    }
}
