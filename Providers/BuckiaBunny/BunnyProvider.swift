import BuckiaCore
import BuckiaHTTP
import BuckiaProviderKit
import Foundation

/// A provider for Bunny.net Edge Storage (a storage zone), through its HTTP API.
///
/// Every upload carries its SHA-256 (`Checksum`), which Bunny checks before storing; a whole
/// download is checked against the SHA-256 Bunny lists for the file, as it arrives. Bunny keeps
/// no modification time of the source, has no server-side copy, no conditional requests and no
/// paged or recursive listing: capabilities say so, and listings walk the folders one level at
/// a time, in key order, with resume tokens and start-after kept by the client.
///
/// Deleting a key first asks what it is (`DESCRIBE`): Bunny deletes a directory, with all it
/// holds, when asked to delete its path, so a key that names a directory is left alone — a
/// delete of one object never removes a folder of others.
///
/// Public URLs go through the configured pull zone, signed (``BunnyTokenFactory``) when a token
/// key is configured. Configuration: `bucketName` (the storage zone) and ``BunnySettings``.
public struct BunnyProvider: StorageProviderPlugin {
    public static let providerType: ProviderType = .bunny

    /// The resolved settings.
    public let settings: BunnySettings
    let client: HTTPClient
    let now: @Sendable () -> Date

    public var capabilities: ProviderCapabilities {
        var features: Set<Capability> = [
            .readWithRange, .listStartAfter, .pagedListing, .resumableListing, .streamingTransfers, .persistent, .verifiesKnownChecksums,
        ]
        if settings.pullZone != nil { features.insert(.publicURL) }
        if settings.tokenKey != nil { features.insert(.accessToken) }
        return ProviderCapabilities(
            features: features, checksums: [.sha256: .listing], listedFields: [.serverModified, .contentType, .etag],
            modificationTimePrecision: .milliseconds(1), maxListPageSize: 1000)
    }

    public static var knownOptions: Set<String>? { BunnySettings.knownOptions }

    public init(context: ProviderContext) throws {
        try self.init(
            settings: BunnySettings.resolve(context.configuration, environment: context.environment), log: context.log,
            resources: context.resources)
    }

    /// Creates a provider from a configuration, reading the process's environment.
    public init(configuration: BuckiaConfiguration) throws {
        try self.init(settings: BunnySettings.resolve(configuration))
    }

    /// Creates a provider from resolved settings, with an injectable clock (signed URLs and
    /// tokens), an optional log of redacted HTTP attempts, and the transport (the shared one of
    /// `resources` when nil) and retry policy.
    public init(
        settings: BunnySettings, now: @escaping @Sendable () -> Date = { Date() }, log: (@Sendable (String) -> Void)? = nil,
        transport: (any HTTPTransport)? = nil, retryPolicy: RetryPolicy = .standard, resources: SharedResources = .process
    ) {
        self.settings = settings
        self.now = now
        var configuration = HTTPClient.Configuration(maximumConnectionsPerHost: max(6, settings.concurrency * 2), userAgent: BuckiaVersion.userAgent(component: "Bunny"))
        configuration.mapFailure = { BunnyProvider.map($0) }
        configuration.log = log
        configuration.retryPolicy = retryPolicy
        settings.http.apply(to: &configuration)
        client = HTTPClient(configuration: configuration, transport: transport, resources: resources)
    }

    public func testConnection() async throws -> ConnectionStatus {
        let start = ContinuousClock.now
        do {
            _ = try await folder("")
            return ConnectionStatus(isConnected: true, message: "Storage zone \(settings.zone) answers at \(settings.endpoint.host ?? "").", latency: ContinuousClock.now - start)
        } catch let error as BuckiaError {
            return ConnectionStatus(isConnected: false, message: error.description, latency: ContinuousClock.now - start)
        }
    }

    // MARK: Requests

    /// The storage URL of `path` (a key, or a folder ending in `/`).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidPath`` when no URL can be made (never a
    ///   fallback to the endpoint, which would act on the zone's root).
    func url(_ path: String) throws -> URL {
        var base = settings.endpoint.absoluteString
        if base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + "/" + Self.encode(settings.zone) + "/" + Self.encode(path)) else {
            throw BuckiaError(.invalidPath, "No storage URL can address \(path.debugDescription) in zone \(settings.zone).", operation: "address", path: path)
        }
        return url
    }

    /// A request with the zone's password.
    func request(_ method: HTTPRequest.Method, _ path: String, body: HTTPRequest.Body = .none, accepts: HTTPRequest.AcceptedStatuses = .successful) throws -> HTTPRequest {
        var request = HTTPRequest(method, try url(path), body: body, accepts: accepts)
        request.headers.set("AccessKey", secret: settings.accessKey)
        return request
    }

    func send(_ request: HTTPRequest, operation: String, path: String) async throws -> HTTPResponse {
        do {
            return try await client.send(request)
        } catch {
            throw BuckiaError.wrapping(error, operation: operation, path: path)
        }
    }

    /// Bunny's error documents (`{"HttpCode": 404, "Message": "Object Not Found"}`) in Buckia's codes.
    static func map(_ failure: HTTPFailure) -> BuckiaError? {
        struct Document: Decodable {
            let HttpCode: Int?
            let Message: String?
        }
        let message = (try? JSONValidation.decode(Document.self, from: failure.body, what: "Bunny's error"))?.Message?.escapingControlCharacters
        let detail = message.map { ": \($0)" } ?? ""
        switch failure.status {
        case 401:
            return BuckiaError(
                .unauthorized,
                "Bunny refused the storage zone password\(detail). Check the password, the zone name and its region (a zone answers only at its primary region's host); a read-only password cannot write.",
                cause: failure)
        case 404:
            return BuckiaError(.notFound, "Bunny has no object there\(detail).", cause: failure)
        case 400 where (message ?? "").localizedCaseInsensitiveContains("checksum"):
            return BuckiaError(.checksumMismatch, "Bunny refused the upload: its bytes do not match their SHA-256\(detail).", cause: failure)
        case 429:
            return BuckiaError(.rateLimited, "Bunny asked to slow down\(detail). Reduce maxConcurrentOperations.", cause: failure, retryAfter: failure.retryAfter)
        case 500...:
            return BuckiaError(.transient, "Bunny failed the request (\(failure.status))\(detail). Retry later.", cause: failure, retryAfter: failure.retryAfter)
        default:
            return nil
        }
    }

    /// A path percent-encoded for a URL: everything but unreserved characters and `/`.
    static func encode(_ text: String) -> String {
        PercentEncoding.encode(text, keepingSlash: true)
    }

    // MARK: Objects as Bunny describes them

    /// One entry of a listing or a `DESCRIBE`.
    struct StorageObject: Decodable {
        let ObjectName: String
        let Length: Int64?
        let LastChanged: String?
        let IsDirectory: Bool
        let ContentType: String?
        let Checksum: String?
    }

    /// The object at `key`, or nil when there is none or the key names a directory.
    func describe(_ key: ObjectKey, operation: String) async throws -> StorageObject? {
        let response = try await send(request("DESCRIBE", key.rawValue, accepts: .successfulAnd([404])), operation: operation, path: key.rawValue)
        guard response.status != 404 else { return nil }
        return try Self.storageObject(answer: response.data, key: key, operation: operation)
    }

    /// A `DESCRIBE` answer: the object, or nil when the key names a directory.
    static func storageObject(answer data: Data, key: ObjectKey, operation: String) throws -> StorageObject? {
        let object: StorageObject
        do {
            object = try JSONValidation.decode(StorageObject.self, from: data, what: "Bunny's description")
        } catch {
            throw BuckiaError(.corrupt, "Bunny described the object in JSON Buckia cannot read\(Self.reason(error)).", operation: operation, path: key.rawValue, cause: error)
        }
        return object.IsDirectory ? nil : object
    }

    /// Why a JSON answer could not be read, when the reason is one of Buckia's own sentences
    /// (malformed or too deeply nested JSON): `": …"`, or nothing.
    static func reason(_ error: any Error) -> String {
        (error as? BuckiaError).map { ": \(String($0.message.hasSuffix(".") ? $0.message.dropLast() : Substring($0.message)))" } ?? ""
    }

    /// What Bunny's description says of `key`. Its `Checksum` is taken as the object's SHA-256
    /// only when it is one (64 hex digits): a whole download is verified against it, and text
    /// that is not hex would verify nothing while a sync compared it as the content's name.
    static func remoteFile(_ key: ObjectKey, _ object: StorageObject) -> RemoteFile {
        let sha256 = object.Checksum.map { $0.lowercased() }.flatMap { Hex.isDigest($0, length: 32) ? $0 : nil }
        return RemoteFile(
            path: key, size: object.Length ?? 0, serverModified: object.LastChanged.flatMap(parseDate),
            checksums: sha256.map { [.sha256: $0] } ?? [:], contentType: object.ContentType.flatMap { $0.isEmpty ? nil : $0 },
            etag: sha256.map(entityTag))
    }

    /// Bunny has no entity tags; the SHA-256 it keeps for each file names its content as well
    /// as one would, so the provider offers it as one (quoted): a sync then knows an unchanged
    /// file by its listing alone, for Bunny keeps no source modification time either.
    static func entityTag(_ sha256: String) -> String { "\"\(sha256)\"" }

    /// Bunny's dates: `2023-04-20T15:32:08.004`, UTC, no zone, 0 to 7 fractional digits, kept
    /// to the millisecond as a whole number of them (so the same text always makes the same
    /// `Date`, bit for bit, and a state store's baseline compares equal). Anything else — no
    /// seconds part, a fraction that is not all digits, a zone — is no date (`nil`), never a trap.
    static func parseDate(_ text: String) -> Date? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        // Split without omitting empty parts, the first always exists; a parse failure is the
        // answer (no date), nothing was read from anywhere.
        guard parts.first?.isEmpty == false else { return nil }
        guard let whole = try? Date(String(parts[0]) + "Z", strategy: Date.ISO8601FormatStyle()) else { return nil }
        var milliseconds = Int64(whole.timeIntervalSince1970) * 1000
        if parts.count == 2 {
            let fraction = parts[1]
            guard (1...7).contains(fraction.count), fraction.allSatisfy({ ("0"..."9").contains($0) }),
                  let value = Int64(String(fraction.prefix(3)).padding(toLength: 3, withPad: "0", startingAt: 0)) else { return nil }
            milliseconds += value
        }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// The items of one folder (`""` for the root, else ending in `/`); a missing folder is empty.
    func folder(_ prefix: String) async throws -> [FolderItem] {
        let response = try await send(request(.get, prefix, accepts: .successfulAnd([404])), operation: "list", path: prefix)
        guard response.status != 404 else { return [] }
        return try Self.folderItems(answer: response.data, folder: prefix)
    }
}
