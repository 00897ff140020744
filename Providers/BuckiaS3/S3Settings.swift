import BuckiaCore
import BuckiaHTTP
import BuckiaSigV4
import Foundation

/// Where an S3 provider connects and with which credentials, resolved once at creation.
///
/// Each setting comes from the first place that has it:
///
/// | setting | configuration | environment | shared files | default |
/// |---|---|---|---|---|
/// | credentials | `authConfig.credentials` `accessKeyId`, `secretAccessKey`, `sessionToken` | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`; then a login: `AWS_WEB_IDENTITY_TOKEN_FILE` with `AWS_ROLE_ARN` (and `AWS_ROLE_SESSION_NAME`) | the profile's `web_identity_token_file` with `role_arn`, then `~/.aws/credentials` (profile `AWS_PROFILE` or option `profile`, else `default`) | — |
/// | STS endpoint (for a login) | option `stsEndpoint` | `AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL` | | `https://sts.<region>.amazonaws.com` |
/// | region | option `region` | `AWS_REGION`, `AWS_DEFAULT_REGION` | `~/.aws/config` `region` | `us-east-1` |
/// | endpoint | option `endpoint` | `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL` | `~/.aws/config` `endpoint_url` | `https://s3.<region>.amazonaws.com` |
/// | addressing | option `addressingStyle` (`path`, `virtual`, `auto`) | | | `auto`: virtual-hosted on AWS, path-style elsewhere |
/// | server profile | option `vendor` (``S3Profile/Vendor`` or `auto`) | | | `auto`: from the endpoint's host, else `generic` |
///
/// Plain `http` endpoints are accepted only for loopback addresses unless option
/// `allowHTTP` is `true`: credentials signed over plain HTTP to another host can be replayed.
public struct S3Settings: Sendable {
    public var bucket: String
    public var region: String
    public var endpoint: URL
    public var usesPathStyle: Bool
    /// The fixed credentials requests are signed with, unless ``credentialSource`` or
    /// ``webIdentity`` gives them.
    public var credentials: AWSCredentials
    /// Temporary credentials from a login, exchanged at an STS endpoint and renewed before they
    /// expire (``WebIdentityCredentials``, over the provider's own HTTP client).
    public var webIdentity: WebIdentitySettings?
    /// A source of credentials of the app's own, asked before every request (an app that keeps
    /// its login elsewhere); it wins over ``webIdentity`` and ``credentials``.
    public var credentialSource: (any AWSCredentialSource)?
    /// Objects at least this large go up in parts.
    public var multipartThreshold: Int64
    /// The size of each part (S3's minimum, 5 MiB, by default); a file too large for 10,000
    /// parts of this size uses larger ones. Memory for an upload is about this × concurrency.
    public var partSize: Int64

    /// The part size for a file of `size` bytes: ``partSize``, or larger so that the file fits
    /// in the server's parts (10,000 on every server Buckia has a profile for).
    public func partSize(forFileOf size: Int64) -> Int64 {
        let parts = Int64(max(1, profile.maximumParts))
        let needed = size / parts + (size % parts == 0 ? 0 : 1)
        let mebibyte: Int64 = 1_048_576
        return max(partSize, (needed + mebibyte - 1) / mebibyte * mebibyte)
    }
    /// Transfers and parts in flight at once.
    public var concurrency: Int
    /// Whether the bucket is readable without credentials, so plain object URLs work.
    public var isPublic: Bool
    /// Where resumable multipart uploads keep their state (option `stateDirectory`, default
    /// the caches folder's `buckia/multipart`).
    public var stateDirectory: URL
    /// Whether a single-part upload's ETag is its MD5 (option `etagIsMD5`, default the
    /// profile's: `true` for every vendor Buckia knows).
    /// Set it to `false` for buckets encrypted with SSE-KMS or SSE-C, and for S3-compatible
    /// stores whose ETags are not MD5s: then only the `md5chksum` metadata gives an MD5.
    public var etagIsMD5: Bool
    /// Whether the server checks `Content-MD5` and refuses a mismatch with `BadDigest` (option
    /// `verifiesContentMD5`, default the profile's: `true` as AWS does, `false` for moto). Set it to `false` for servers that
    /// accept any value, so the provider does not declare ``BuckiaCore/Capability/verifiesKnownChecksums``.
    public var verifiesContentMD5: Bool
    /// What this server does differently (option `vendor`), with the options that override a
    /// row of it (`conditionalWrites`, `etagIsMD5`, `verifiesContentMD5`, `userMetadata`) applied.
    public var profile: S3Profile = .of(.generic)
    /// Timeouts, retries and the CA file for this remote (``BuckiaHTTP/HTTPRemoteOptions``).
    public var http = HTTPRemoteOptions()

    /// The options the s3 provider reads; any other is a configuration error.
    public static let knownOptions: Set<String> = Set([
        "region", "endpoint", "addressingStyle", "allowHTTP", "profile", "partSizeMiB", "multipartThresholdMiB",
        "publicBucket", "stateDirectory", "etagIsMD5", "verifiesContentMD5", "vendor", "conditionalWrites", "conditionalCompletions", "partSelections",
        "userMetadata", "stsEndpoint",
    ]).union(HTTPRemoteOptions.names)

    /// Resolves settings from a configuration, the environment and the shared AWS files.
    public static func resolve(
        _ configuration: BuckiaConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment,
        home: String? = nil
    ) throws -> S3Settings {
        let options = configuration.options
        try configuration.checkOptions(known: knownOptions)
        guard !configuration.bucketName.isEmpty else {
            throw BuckiaError(.invalidConfiguration, "The s3 provider needs a bucketName.", path: "bucketName")
        }
        try checkBucketName(configuration.bucketName)
        let homeDirectory = home ?? environment["HOME"] ?? NSHomeDirectory()
        let profileName = options["profile"] ?? environment["AWS_PROFILE"] ?? "default"
        let credentialsFile = try AWSProfileFile.load(
            environment["AWS_SHARED_CREDENTIALS_FILE"] ?? "\(homeDirectory)/.aws/credentials", isConfigFile: false)
        let configFile = try AWSProfileFile.load(environment["AWS_CONFIG_FILE"] ?? "\(homeDirectory)/.aws/config", isConfigFile: true)
        let awsProfile = (configFile?.profile(profileName) ?? [:]).merging(credentialsFile?.profile(profileName) ?? [:]) { $1 }

        let region = options["region"] ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? awsProfile["region"] ?? "us-east-1"
        guard !region.isEmpty, region.utf8.count <= 64, region.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 }) else {
            throw BuckiaError(
                .invalidConfiguration, "The S3 region \(region.debugDescription) is not a region name such as eu-west-1 (lowercase letters, digits and '-').",
                path: "options.region")
        }
        let allowHTTP = try configuration.flag("allowHTTP", default: false)
        let resolved = try resolveCredentials(configuration.authConfig, environment: environment, profile: awsProfile, profileName: profileName)
        var credentials = AWSCredentials(accessKeyId: "", secretAccessKey: Secret(""))
        var webIdentity: WebIdentitySettings?
        switch resolved {
        case .fixed(let fixed): credentials = fixed
        case .login(let tokenFile, let roleArn, let sessionName):
            let stsText = options["stsEndpoint"] ?? environment["AWS_ENDPOINT_URL_STS"] ?? environment["AWS_ENDPOINT_URL"]
            let sts = try HTTPRemoteOptions.url(
                stsText ?? "https://sts.\(region).amazonaws.com", provider: "S3", option: "stsEndpoint", example: "https://sts.us-east-1.amazonaws.com",
                allowHTTP: allowHTTP)
            webIdentity = WebIdentitySettings(
                stsEndpoint: sts, roleArn: roleArn, sessionName: sessionName, token: WebIdentitySettings.tokenFile(tokenFile))
        }
        let endpointText = options["endpoint"] ?? environment["AWS_ENDPOINT_URL_S3"] ?? environment["AWS_ENDPOINT_URL"] ?? awsProfile["endpoint_url"]
        let endpoint = try endpointURL(endpointText, region: region, allowHTTP: allowHTTP)
        // The server's profile, with the options that override a row of it.
        var profile = try S3Profile.resolve(option: options["vendor"], endpoint: endpoint)
        profile.conditionalWrites = try configuration.flag("conditionalWrites", default: profile.conditionalWrites)
        profile.conditionalCompletions = try configuration.flag("conditionalCompletions", default: profile.conditionalCompletions)
        profile.partSelections = try configuration.flag("partSelections", default: profile.partSelections)
        profile.etagIsMD5 = try configuration.flag("etagIsMD5", default: profile.etagIsMD5)
        profile.verifiesContentMD5 = try configuration.flag("verifiesContentMD5", default: profile.verifiesContentMD5)
        profile.userMetadata = try configuration.flag("userMetadata", default: profile.userMetadata)
        let usesPathStyle: Bool
        switch options["addressingStyle"] ?? "auto" {
        case "path": usesPathStyle = true
        case "virtual": usesPathStyle = false
        case "auto": usesPathStyle = !profile.virtualHostedByDefault || configuration.bucketName.contains(".")
        case let other:
            throw BuckiaError(.invalidConfiguration, "addressingStyle is \(other.debugDescription); use path, virtual or auto.", path: "options.addressingStyle")
        }
        // The profile's smallest part (5 MiB on every server Buckia knows) bounds the options.
        let smallestPart = max(1, profile.minimumPartSize >> 20)
        let partSize = try megabytes(options["partSizeMiB"], default: smallestPart, minimum: smallestPart, name: "partSizeMiB")
        let http = try HTTPRemoteOptions(options: options)
        var settings = S3Settings(
            bucket: configuration.bucketName, region: region, endpoint: endpoint, usesPathStyle: usesPathStyle, credentials: credentials,
            multipartThreshold: try megabytes(options["multipartThresholdMiB"], default: 64, minimum: smallestPart, name: "multipartThresholdMiB"),
            partSize: partSize, concurrency: configuration.maxConcurrentOperations, isPublic: try configuration.flag("publicBucket", default: false),
            stateDirectory: options["stateDirectory"].map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? StorageDirectory.caches(appendingPath: "buckia/multipart").url,
            etagIsMD5: profile.etagIsMD5, verifiesContentMD5: profile.verifiesContentMD5)
        settings.profile = profile
        settings.http = http
        settings.webIdentity = webIdentity
        return settings
    }

    /// Refuses bucket names no S3-compatible store accepts, and any that would change the
    /// request's path or host (`..`, `/`, control characters).
    static func checkBucketName(_ name: String) throws {
        let bytes = Array(name.utf8)
        let allowed = bytes.allSatisfy { (97...122).contains($0) || (65...90).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 46 || $0 == 95 }
        let edges: Set<UInt8> = [45, 46, 95]  // '-', '.', '_' may not begin or end a name
        guard allowed, (3...255).contains(bytes.count), !edges.contains(bytes[0]), !edges.contains(bytes[bytes.count - 1]), !name.contains("..") else {
            throw BuckiaError(
                .invalidConfiguration,
                "The bucket name \(name.debugDescription) is not valid: use 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit.",
                path: "bucketName")
        }
    }

    /// Fixed credentials, or a login to exchange for temporary ones.
    enum ResolvedCredentials {
        case fixed(AWSCredentials)
        case login(tokenFile: String, roleArn: String, sessionName: String)
    }

    /// The AWS SDKs' order: the configuration's keys, the environment's keys, a login named by
    /// the environment, then the shared profile's login or keys.
    private static func resolveCredentials(
        _ auth: AuthenticationConfiguration, environment: [String: String], profile: [String: String], profileName: String
    ) throws -> ResolvedCredentials {
        if let id = auth.credentials["accessKeyId"], !id.isEmpty {
            let secret = try auth.requireCredential("secretAccessKey", for: .s3)
            return .fixed(AWSCredentials(accessKeyId: id.exposedValue, secretAccessKey: secret, sessionToken: auth.credentials["sessionToken"]))
        }
        if let id = environment["AWS_ACCESS_KEY_ID"], !id.isEmpty {
            guard let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else {
                throw BuckiaError(.invalidConfiguration, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not.", path: "AWS_SECRET_ACCESS_KEY")
            }
            return .fixed(AWSCredentials(accessKeyId: id, secretAccessKey: Secret(secret), sessionToken: environment["AWS_SESSION_TOKEN"].map { Secret($0) }))
        }
        let tokenFile = environment["AWS_WEB_IDENTITY_TOKEN_FILE"].flatMap { $0.isEmpty ? nil : $0 } ?? profile["web_identity_token_file"]
        let roleArn = environment["AWS_ROLE_ARN"].flatMap { $0.isEmpty ? nil : $0 } ?? profile["role_arn"]
        if let tokenFile, !tokenFile.isEmpty {
            guard let roleArn, !roleArn.isEmpty else {
                throw BuckiaError(
                    .invalidConfiguration, "A web identity token file is named but no role: set AWS_ROLE_ARN (or role_arn in the profile).", path: "AWS_ROLE_ARN")
            }
            let sessionName = environment["AWS_ROLE_SESSION_NAME"] ?? profile["role_session_name"] ?? "buckia-\(Int(Date().timeIntervalSince1970))"
            guard (2...64).contains(sessionName.utf8.count), sessionName.utf8.allSatisfy({ byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || Array("+=,.@_-".utf8).contains(byte)
            }) else {
                throw BuckiaError(
                    .invalidConfiguration, "The role session name \(sessionName.debugDescription) is not 2 to 64 of letters, digits and +=,.@_-.",
                    path: "AWS_ROLE_SESSION_NAME")
            }
            return .login(tokenFile: tokenFile, roleArn: roleArn, sessionName: sessionName)
        }
        if let id = profile["aws_access_key_id"], let secret = profile["aws_secret_access_key"] {
            return .fixed(AWSCredentials(accessKeyId: id, secretAccessKey: Secret(secret), sessionToken: profile["aws_session_token"].map { Secret($0) }))
        }
        throw BuckiaError(
            .unauthorized,
            "No S3 credentials found: set authConfig credentials accessKeyId and secretAccessKey, the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY variables, AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN for a login, or the [\(profileName)] profile in ~/.aws/credentials.",
            path: "authConfig.credentials")
    }

    private static func endpointURL(_ text: String?, region: String, allowHTTP: Bool) throws -> URL {
        try HTTPRemoteOptions.url(
            text ?? "https://s3.\(region).amazonaws.com", provider: "S3", option: "endpoint", example: "https://s3.example.com", allowHTTP: allowHTTP)
    }

    private static func megabytes(_ text: String?, default value: Int64, minimum: Int64, name: String) throws -> Int64 {
        guard let text else { return value * 1_048_576 }
        guard let number = Int64(text), number >= minimum, number <= 5 * 1024 else {
            throw BuckiaError(.invalidConfiguration, "\(name) must be a whole number from \(minimum) to 5120.", path: "options.\(name)")
        }
        return number * 1_048_576
    }
}
