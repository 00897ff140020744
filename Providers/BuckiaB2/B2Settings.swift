import BuckiaCore
import BuckiaHTTP
import Foundation

/// Where a B2 provider connects and with which key, resolved once at creation.
///
/// | setting | configuration | environment | default |
/// |---|---|---|---|
/// | key | `authConfig.credentials` `applicationKeyId`, `applicationKey` | `B2_APPLICATION_KEY_ID`, `B2_APPLICATION_KEY` (the official `b2` tool's) | — |
/// | bucket | `bucketName` | | — |
/// | endpoint | option `endpoint` | | `https://api.backblazeb2.com` |
/// | large files | options `largeFileThreshold`, `partSize` (bytes, or with `K`, `M`, `G`: binary units) | | `200M`, `96M` (rclone's defaults) |
/// | public bucket | option `publicBucket` | | `false` |
/// | download host | option `downloadURL` | | the one the authorization names |
///
/// The endpoint is only where the account is authorized: the API and download hosts come from
/// the authorization's answer. Plain `http` is accepted only for loopback addresses unless option
/// `allowHTTP` is `true`, for the key travels in every authorization.
public struct B2Settings: Sendable {
    /// The bucket's name.
    public var bucket: String
    /// The application key's id (not secret; it names the key in messages).
    public var keyId: String
    /// The application key.
    public var applicationKey: Secret
    /// Where `b2_authorize_account` is called.
    public var endpoint: URL
    /// Files at least this large go up as B2 large files, in parts.
    public var largeFileThreshold: Int64
    /// The size of each part of a large file (raised to the server's minimum, and so that the
    /// file fits in 10,000 parts). Memory for an upload does not grow with it: parts are sent
    /// from the file in place.
    public var partSize: Int64
    /// Transfers and parts in flight at once; each has an upload URL of its own.
    public var concurrency: Int
    /// Whether the bucket is `allPublic`, so plain download URLs work without a token.
    public var isPublic: Bool
    /// The download host public URLs are built on, when configured; otherwise the one the
    /// account's authorization names.
    public var downloadURL: URL?
    /// Timeouts, retries and the CA file for this remote (``BuckiaHTTP/HTTPRemoteOptions``).
    public var http = HTTPRemoteOptions()

    /// The options the b2 provider reads; any other is a configuration error.
    public static let knownOptions: Set<String> = Set([
        "endpoint", "allowHTTP", "largeFileThreshold", "partSize", "publicBucket", "downloadURL",
    ]).union(HTTPRemoteOptions.names)

    /// B2's limit on one part, and on a file sent in one request.
    public static let maximumPartSize: Int64 = 5_000_000_000
    /// B2's limit on the number of parts of a large file.
    public static let maximumPartCount: Int64 = 10_000

    /// The part size for a file of `size` bytes: ``partSize`` or the server's minimum,
    /// whichever is larger, and larger still if the file would need more than 10,000 parts.
    public func partSize(forFileOf size: Int64, minimum: Int64) -> Int64 {
        let needed = (size + B2Settings.maximumPartCount - 1) / B2Settings.maximumPartCount
        return max(partSize, minimum, needed)
    }

    /// Resolves settings from a configuration and the environment.
    public static func resolve(
        _ configuration: BuckiaConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> B2Settings {
        let options = configuration.options
        try configuration.checkOptions(known: knownOptions)
        guard !configuration.bucketName.isEmpty else {
            throw BuckiaError(.invalidConfiguration, "The b2 provider needs a bucketName.", path: "bucketName")
        }
        try checkBucketName(configuration.bucketName)
        let (keyId, key) = try credentials(configuration.authConfig, environment: environment)
        let allowHTTP = try configuration.flag("allowHTTP", default: false)
        let endpoint = try url(options["endpoint"] ?? "https://api.backblazeb2.com", option: "endpoint", allowHTTP: allowHTTP)
        let downloadURL = try options["downloadURL"].map { try url($0, option: "downloadURL", allowHTTP: allowHTTP) }
        let threshold = try size(options["largeFileThreshold"], default: 200 * 1_048_576, name: "largeFileThreshold")
        let partSize = try size(options["partSize"], default: 96 * 1_048_576, name: "partSize")
        guard threshold <= maximumPartSize else {
            throw BuckiaError(
                .invalidConfiguration, "largeFileThreshold is above B2's 5 GB limit for a file sent in one request.",
                path: "options.largeFileThreshold")
        }
        var settings = B2Settings(
            bucket: configuration.bucketName, keyId: keyId, applicationKey: key, endpoint: endpoint, largeFileThreshold: threshold,
            partSize: partSize, concurrency: configuration.maxConcurrentOperations, isPublic: try configuration.flag("publicBucket", default: false),
            downloadURL: downloadURL)
        settings.http = try HTTPRemoteOptions(options: options)
        return settings
    }

    /// Creates settings directly, for tests and programs that build their own.
    public init(
        bucket: String, keyId: String, applicationKey: Secret, endpoint: URL = URL(string: "https://api.backblazeb2.com")!,
        largeFileThreshold: Int64 = 200 * 1_048_576, partSize: Int64 = 96 * 1_048_576, concurrency: Int = 4, isPublic: Bool = false,
        downloadURL: URL? = nil
    ) {
        self.bucket = bucket
        self.keyId = keyId
        self.applicationKey = applicationKey
        self.endpoint = endpoint
        self.largeFileThreshold = largeFileThreshold
        self.partSize = max(1, partSize)
        self.concurrency = max(1, concurrency)
        self.isPublic = isPublic
        self.downloadURL = downloadURL
    }

    /// B2's bucket-name rules: 6 to 50 letters, digits and '-', not starting with `b2-`.
    static func checkBucketName(_ name: String) throws {
        let bytes = Array(name.utf8)
        let allowed = bytes.allSatisfy { (97...122).contains($0) || (65...90).contains($0) || (48...57).contains($0) || $0 == 45 }
        guard allowed, (6...50).contains(bytes.count), !name.lowercased().hasPrefix("b2-") else {
            throw BuckiaError(
                .invalidConfiguration,
                "The bucket name \(name.debugDescription) is not a B2 bucket name: 6 to 50 letters, digits and '-', not starting with b2-.",
                path: "bucketName")
        }
    }

    private static func credentials(_ auth: AuthenticationConfiguration, environment: [String: String]) throws -> (String, Secret) {
        if let id = auth.credentials["applicationKeyId"], !id.isEmpty {
            return (id.exposedValue, try auth.requireCredential("applicationKey", for: .b2))
        }
        if let id = environment["B2_APPLICATION_KEY_ID"], !id.isEmpty {
            guard let key = environment["B2_APPLICATION_KEY"], !key.isEmpty else {
                throw BuckiaError(.invalidConfiguration, "B2_APPLICATION_KEY_ID is set but B2_APPLICATION_KEY is not.", path: "B2_APPLICATION_KEY")
            }
            return (id, Secret(key))
        }
        throw BuckiaError(
            .unauthorized,
            "No B2 application key found: set authConfig credentials applicationKeyId and applicationKey, or the B2_APPLICATION_KEY_ID and B2_APPLICATION_KEY variables.",
            path: "authConfig.credentials")
    }

    private static func url(_ text: String, option: String, allowHTTP: Bool) throws -> URL {
        try HTTPRemoteOptions.url(text, provider: "B2", option: option, example: "https://api.backblazeb2.com", allowHTTP: allowHTTP)
    }

    /// A byte count: digits, optionally followed by K, M or G (binary units, `B` or `iB` allowed).
    static func size(_ text: String?, default value: Int64, name: String) throws -> Int64 {
        guard let text else { return value }
        var digits = Substring(text.trimmingCharacters(in: .whitespaces).lowercased())
        var unit: Int64 = 1
        for suffix in ["ib", "b"] where digits.hasSuffix(suffix) {
            digits = digits.dropLast(suffix.count)
            break
        }
        switch digits.last {
        case "k": unit = 1 << 10
        case "m": unit = 1 << 20
        case "g": unit = 1 << 30
        default: break
        }
        if unit > 1 { digits = digits.dropLast() }
        guard let number = Int64(digits), number > 0, number <= B2Settings.maximumPartSize / unit else {
            throw BuckiaError(
                .invalidConfiguration, "\(name) must be a positive byte count such as 104857600 or 100M, at most 5 GB; it is \(text.debugDescription).",
                path: "options.\(name)")
        }
        return number * unit
    }
}
