import BuckiaCore
import BuckiaHTTP
import BuckiaSigV4
import Foundation

/// A provider for Amazon S3 and every S3-compatible store: MinIO, Ceph, Cloudflare R2, Wasabi,
/// Backblaze's and Bunny's S3 endpoints.
///
/// Requests are signed with SigV4 and go through ``BuckiaHTTP/HTTPClient`` (retries for
/// transient failures only, bounded memory for file transfers). Uploads carry `Content-MD5`
/// and store the MD5 and the source's modification time as object metadata in rclone's
/// conventions (`x-amz-meta-md5chksum`, base64; `x-amz-meta-mtime`, decimal seconds), so each
/// tool reads what the other wrote, downloads are verified and times restored even where
/// the ETag is not an MD5. S3's error codes map to ``BuckiaCore/BuckiaError`` codes
/// (`NoSuchKey` → notFound, `AccessDenied` → permissionDenied, `SignatureDoesNotMatch` →
/// unauthorized, `SlowDown` → rateLimited and retried).
///
/// Configuration: `bucketName`, and the options and sources in ``S3Settings``.
public struct S3Provider: StorageProviderPlugin {
    public static let providerType: ProviderType = .s3

    /// The resolved connection settings.
    public let settings: S3Settings
    let client: HTTPClient
    /// The budget streamed uploads' parts share with every provider of the same resources.
    let partMemory: UploadMemory
    /// Where whole-file hashing runs: the resources' pool (nil once they are shut down, when
    /// every request fails anyway, and the process's pool stands in).
    let pool: BlockingPool?
    /// Signs with the fixed credentials; nil when ``credentialSource`` gives them.
    let signer: SigV4Signer?
    /// Where each request's credentials come from when they are not fixed: the app's source, or
    /// a login's (``WebIdentityCredentials``).
    package let credentialSource: (any AWSCredentialSource)?
    let now: @Sendable () -> Date
    /// Whether a `learned` profile has found the server wants bare ETags
    /// (``S3Profile/ETagForm/learned``); shared by every copy of the provider.
    let learnedBareETags = Locked(false)

    public var capabilities: ProviderCapabilities {
        var features: Set<Capability> = [
            .readWithRange, .listStartAfter, .pagedListing, .streamingTransfers, .multipartUpload, .serverSideCopy,
            .preservesModificationTime, .persistent, .setModificationTime, .resumableListing, .unfinishedUploads, .streamingUploads,
            .contentHeaders, .partUploads,
        ]
        // A presigned URL is made without a request, so only with credentials in hand.
        if signer != nil { features.insert(.presign) }
        if settings.profile.userMetadata { features.insert(.userMetadata) }
        if settings.profile.conditionalWrites { features.insert(.conditionalWrite) }
        if settings.profile.conditionalWrites && settings.profile.conditionalCompletions { features.insert(.conditionalCompletion) }
        if settings.profile.partSelections { features.insert(.partSelections) }
        if settings.profile.conditionalReads { features.insert(.conditionalRead) }
        if settings.isPublic { features.insert(.publicURL) }
        if settings.verifiesContentMD5 { features.insert(.verifiesKnownChecksums) }
        // A single-part upload's ETag is its MD5 and comes in the listing; a multipart
        // upload's MD5 is only in its metadata, so the worst case costs a HEAD. A server whose
        // ETags are not MD5s and that keeps no metadata (a gateway in front of a folder) can
        // report no MD5 at all.
        let md5: [ChecksumAlgorithm: ChecksumCost] = settings.profile.etagIsMD5 || settings.profile.userMetadata ? [.md5: .stat] : [:]
        return ProviderCapabilities(
            features: features, checksums: md5, listedFields: [.serverModified, .etag],
            // The default maximum object size (2^53): AWS and S3-compatible stores have raised
            // their limits before (MinIO allows 50 TiB), and the bound is there against sizes no
            // object can have, not against a store's current policy.
            modificationTimePrecision: .microseconds(1), maxListPageSize: 1000, uploadPartSize: settings.partSize)
    }

    public static var knownOptions: Set<String>? { S3Settings.knownOptions }

    public init(context: ProviderContext) throws {
        try self.init(
            settings: S3Settings.resolve(context.configuration, environment: context.environment), log: context.log,
            resources: context.resources)
    }

    /// Creates a provider from a configuration, reading the process's environment.
    public init(configuration: BuckiaConfiguration) throws {
        try self.init(settings: S3Settings.resolve(configuration))
    }

    /// Creates a provider from resolved settings, with an injectable clock for signing, an
    /// optional log that receives one redacted line per HTTP attempt, and the HTTP transport
    /// (the shared one of `resources` when nil) with its retry policy.
    public init(
        settings: S3Settings, now: @escaping @Sendable () -> Date = { Date() }, log: (@Sendable (String) -> Void)? = nil,
        transport: (any HTTPTransport)? = nil, retryPolicy: RetryPolicy = .standard, resources: SharedResources = .process
    ) {
        self.settings = settings
        self.now = now
        var configuration = HTTPClient.Configuration(
            maximumConnectionsPerHost: max(6, settings.concurrency * 2), userAgent: BuckiaVersion.userAgent(component: "S3"))
        configuration.mapFailure = { S3ErrorMapping.map($0) }
        configuration.log = log
        configuration.retryPolicy = retryPolicy
        settings.http.apply(to: &configuration)
        client = HTTPClient(configuration: configuration, transport: transport, resources: resources)
        if let source = settings.credentialSource {
            (signer, credentialSource) = (nil, source)
        } else if let login = settings.webIdentity {
            (signer, credentialSource) = (nil, WebIdentityCredentials(settings: login, http: client, clock: now))
        } else {
            (signer, credentialSource) = (SigV4Signer(credentials: settings.credentials, region: settings.region, service: "s3"), nil)
        }
        do {
            partMemory = try resources.resource(SharedUploadMemory.self)
        } catch {
            // Resources already shut down: the transport fails every request with why, so
            // no upload will hold a part; a budget of its own keeps the type whole.
            partMemory = UploadMemory()
        }
        do {
            pool = try resources.blockingPool
        } catch {
            pool = nil  // shut down, as above
        }
    }

    public func testConnection() async throws -> ConnectionStatus {
        let start = ContinuousClock.now
        do {
            _ = try await send(.get, query: [("list-type", "2"), ("max-keys", "1")])
            return ConnectionStatus(
                isConnected: true, message: "Bucket \(settings.bucket) at \(settings.endpoint.host ?? "") answers.",
                latency: ContinuousClock.now - start)
        } catch let error as BuckiaError {
            return ConnectionStatus(isConnected: false, message: error.description, latency: ContinuousClock.now - start)
        }
    }

    // MARK: Requests

    /// The URL of `key` (or of the bucket when nil), with `query`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidPath`` when no URL can be made (never a
    ///   fallback to another URL, which would send the request somewhere else).
    func url(for key: ObjectKey?, query: [(String, String)] = []) throws -> URL {
        var components = URLComponents(url: settings.endpoint, resolvingAgainstBaseURL: false) ?? URLComponents()
        let base = components.percentEncodedPath.hasSuffix("/") ? String(components.percentEncodedPath.dropLast()) : components.percentEncodedPath
        let encodedKey = key.map { SigV4Canonical.encode($0.rawValue, keepSlash: true) } ?? ""
        if settings.usesPathStyle {
            components.percentEncodedPath = base + "/" + SigV4Canonical.encode(settings.bucket) + "/" + encodedKey
        } else {
            components.host = settings.bucket + "." + (components.host ?? "")
            components.percentEncodedPath = base + "/" + encodedKey
        }
        components.percentEncodedQuery = query.isEmpty ? nil
            : query.map { "\(SigV4Canonical.encode($0.0))=\(SigV4Canonical.encode($0.1))" }.joined(separator: "&")
        guard let url = components.url else {
            throw BuckiaError(
                .invalidPath, "No URL can address \(key?.rawValue.debugDescription ?? "the bucket") at \(settings.endpoint.host ?? "the endpoint").",
                operation: "address", path: key?.rawValue)
        }
        return url
    }

    /// The signer for the next request: the fixed one, or one over the source's current credentials.
    func currentSigner() async throws -> SigV4Signer {
        if let signer { return signer }
        guard let credentialSource else { throw BuckiaError(.unauthorized, "The S3 provider has no credentials to sign with.") }
        return SigV4Signer(credentials: try await credentialSource.credentials(), region: settings.region, service: "s3")
    }

    /// A signed request.
    func request(
        _ method: HTTPRequest.Method, key: ObjectKey? = nil, query: [(String, String)] = [], headers: [String: String] = [:],
        body: HTTPRequest.Body = .none, payloadHash: String = SigV4Signer.emptyPayloadHash, accepts: HTTPRequest.AcceptedStatuses = .successful,
        retriesDigestMismatch: Bool = true
    ) async throws -> HTTPRequest {
        let url = try url(for: key, query: query)
        let signer = try await currentSigner()
        let signed = signer.sign(method: method.rawValue, url: url, headers: headers, payloadHash: payloadHash, date: now())
        var fields = HTTPHeaders()
        for (name, value) in signed.sorted(by: { $0.key < $1.key }) {
            fields.set(name, value, sensitive: name == "authorization" || name == "x-amz-security-token")
        }
        var request = HTTPRequest(method, url, headers: fields, body: body, accepts: accepts)
        request.retriesDigestMismatch = retriesDigestMismatch
        return request
    }

    /// Sends a request signed afresh for every attempt (a retry carries a new date and
    /// signature) and returns the response, errors mapped from S3's XML. `check` inspects each
    /// accepted response; an `<Error>` S3 put inside a 200 it throws as S3 mapped it, and a
    /// retryable one (`InternalError`) is retried like a failed status. A `BadDigest` is
    /// retried too, for the `Content-MD5` is computed here from the body and the bytes were
    /// damaged on the way; pass `retriesDigestMismatch: false` when the digest is the caller's.
    @discardableResult
    func send(
        _ method: HTTPRequest.Method, key: ObjectKey? = nil, query: [(String, String)] = [], headers: [String: String] = [:],
        body: HTTPRequest.Body = .none, payloadHash: String = SigV4Signer.emptyPayloadHash, accepts: HTTPRequest.AcceptedStatuses = .successful,
        operation: String, retriesDigestMismatch: Bool = true, bodyCheck: HTTPBodyCheck? = nil,
        check: (@Sendable (HTTPResponse) throws -> Void)? = nil
    ) async throws -> HTTPResponse {
        do {
            return try await client.send(interpret: { response in
                try check?(response)
                return response
            }) { _ in
                var request = try await self.request(
                    method, key: key, query: query, headers: headers, body: body, payloadHash: payloadHash, accepts: accepts,
                    retriesDigestMismatch: retriesDigestMismatch)
                request.bodyCheck = bodyCheck
                return request
            }
        } catch {
            throw BuckiaError.wrapping(error, operation: operation, path: key?.rawValue)
        }
    }

    /// Throws the error S3 reported inside a successful response (CompleteMultipartUpload and
    /// CopyObject can answer 200 and fail), mapped like an error status.
    static func errorInBody(_ response: HTTPResponse, operation: String) throws {
        guard response.status == 200, let root = try? XMLNode.parse(response.data, what: operation), root.name == "Error" else { return }
        let failure = HTTPFailure(
            method: "S3", url: response.redactedURL, status: 200, headers: response.headers, body: response.data, attempts: response.attempts)
        throw S3ErrorMapping.map(failure)
            ?? BuckiaError(.transient, "S3 answered \(operation) with an error document.", operation: operation, cause: failure)
    }

    /// `etag` as this server compares it in `If-Match` (``S3Profile/ETagForm``).
    func conditionETag(_ etag: String) -> String {
        switch settings.profile.conditionETags {
        case .quoted: Self.quotedETag(etag)
        case .bare: Self.unquotedETag(etag)
        case .learned: learnedBareETags.withLock { $0 } ? Self.unquotedETag(etag) : Self.quotedETag(etag)
        }
    }

    /// Runs a request that carries `etag` in an `If-Match` header, written by `conditionETag`.
    ///
    /// For a ``S3Profile/ETagForm/learned`` profile still quoting, a 412 is checked: when the
    /// object at `key` has exactly this ETag, the server compared the quotes too (Ceph RGW 16),
    /// so the request is repeated once with the tag bare, and every later condition is bare.
    /// When the ETag differs (the object did change) or the object is gone, the 412 stands.
    func matching<T>(_ etag: String?, key: ObjectKey, _ attempt: (String?) async throws -> T) async throws -> T {
        guard let etag else { return try await attempt(nil) }
        let quoting = settings.profile.conditionETags == .learned && !learnedBareETags.withLock { $0 }
        do {
            return try await attempt(conditionETag(etag))
        } catch let error as BuckiaError where quoting && error.code == .conditionNotMatch {
            guard let current = try await stat(remotePath: key), let currentTag = current.etag,
                Self.unquotedETag(currentTag) == Self.unquotedETag(etag)
            else { throw error }
            learnedBareETags.withLock { $0 = true }
            return try await attempt(conditionETag(etag))
        }
    }

    func send(_ method: HTTPRequest.Method, query: [(String, String)]) async throws -> HTTPResponse {
        try await send(method, key: nil, query: query, operation: "list")
    }
}
