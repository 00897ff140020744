import BuckiaCore
import BuckiaHTTP
import Foundation

/// Where a Bunny provider connects and with which keys, resolved once at creation.
///
/// | setting | configuration | environment | default |
/// |---|---|---|---|
/// | storage zone | `bucketName` | | — |
/// | zone password | `authConfig.credentials` `accessKey` | `BUNNY_STORAGE_ACCESS_KEY` | — |
/// | region | option `region`: `de`, `uk`, `ny`, `la`, `sg`, `se`, `br`, `jh`, `syd` | | `de` (Falkenstein) |
/// | endpoint | option `endpoint`, a URL or hostname (overrides the region) | | the region's |
/// | pull zone | option `pullZoneURL` (`https://zone.b-cdn.net`) | | none: no public URLs |
/// | token key | `authConfig.credentials` `tokenKey` (the pull zone's URL token key) | | none: public URLs unsigned, no tokens |
/// | token scheme | option `tokenScheme`: `hmac`, `advanced`, `basic` | | `hmac` |
/// | signed URL lifetime | option `publicURLExpirySeconds` | | `3600` |
public struct BunnySettings: Sendable {
    /// The storage zone's name.
    public var zone: String
    /// The zone's password (or its read-only password, which allows reading only).
    public var accessKey: Secret
    /// The storage API host, for the zone's primary region.
    public var endpoint: URL
    /// The pull zone public URLs are built on.
    public var pullZone: URL?
    /// The pull zone's token authentication key, which signs public URLs and tokens.
    public var tokenKey: Secret?
    /// The scheme signed URLs use.
    public var tokenScheme: BunnyTokenScheme
    /// How long a signed public URL works.
    public var publicURLLifetime: Duration
    /// Transfers and folder reads in flight at once.
    public var concurrency: Int
    /// Timeouts, retries and the CA file for this remote (``BuckiaHTTP/HTTPRemoteOptions``).
    public var http = HTTPRemoteOptions()

    /// The regions Bunny's storage API serves, by the codes Bunny's SDKs use.
    public static let regions: [String: String] = [
        "de": "storage.bunnycdn.com", "uk": "uk.storage.bunnycdn.com", "ny": "ny.storage.bunnycdn.com", "la": "la.storage.bunnycdn.com",
        "sg": "sg.storage.bunnycdn.com", "se": "se.storage.bunnycdn.com", "br": "br.storage.bunnycdn.com", "jh": "jh.storage.bunnycdn.com",
        "syd": "syd.storage.bunnycdn.com",
    ]

    /// The options the bunny provider reads; any other is a configuration error.
    public static let knownOptions: Set<String> = Set([
        "region", "endpoint", "allowHTTP", "pullZoneURL", "tokenScheme", "publicURLExpirySeconds",
    ]).union(HTTPRemoteOptions.names)

    /// Creates settings directly.
    public init(
        zone: String, accessKey: Secret, endpoint: URL, pullZone: URL? = nil, tokenKey: Secret? = nil, tokenScheme: BunnyTokenScheme = .hmac,
        publicURLLifetime: Duration = .seconds(3600), concurrency: Int = 4
    ) {
        self.zone = zone
        self.accessKey = accessKey
        self.endpoint = endpoint
        self.pullZone = pullZone
        self.tokenKey = tokenKey
        self.tokenScheme = tokenScheme
        self.publicURLLifetime = publicURLLifetime
        self.concurrency = max(1, concurrency)
    }

    /// Resolves settings from a configuration and the environment.
    public static func resolve(
        _ configuration: BuckiaConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> BunnySettings {
        let options = configuration.options
        try configuration.checkOptions(known: knownOptions)
        let zone = configuration.bucketName
        guard (1...64).contains(zone.utf8.count), zone.utf8.allSatisfy({ (97...122).contains($0) || (65...90).contains($0) || (48...57).contains($0) || $0 == 45 }) else {
            throw BuckiaError(
                .invalidConfiguration, "The bunny provider needs bucketName: the storage zone's name (letters, digits and '-'); it is \(zone.debugDescription).",
                path: "bucketName")
        }
        let key: Secret
        if let given = configuration.authConfig.credentials["accessKey"], !given.isEmpty {
            key = given
        } else if let variable = environment["BUNNY_STORAGE_ACCESS_KEY"], !variable.isEmpty {
            key = Secret(variable)
        } else {
            throw BuckiaError(
                .unauthorized, "No Bunny storage password found: set authConfig credentials accessKey (the zone's password), or BUNNY_STORAGE_ACCESS_KEY.",
                path: "authConfig.credentials.accessKey")
        }
        let allowHTTP = try configuration.flag("allowHTTP", default: false)
        let endpoint: URL
        if let text = options["endpoint"] {
            let full = text.contains("://") ? text : "https://" + text
            endpoint = try HTTPRemoteOptions.url(full, provider: "Bunny", option: "endpoint", example: "https://uk.storage.bunnycdn.com", allowHTTP: allowHTTP)
        } else {
            let region = (options["region"] ?? "de").lowercased()
            guard let host = regions[region] else {
                throw BuckiaError(
                    .invalidConfiguration, "region \(region.debugDescription) is not a Bunny storage region; use one of \(regions.keys.sorted().joined(separator: ", ")).",
                    path: "options.region")
            }
            endpoint = try HTTPRemoteOptions.url("https://" + host, provider: "Bunny", option: "region", example: "https://storage.bunnycdn.com", allowHTTP: false)
        }
        let pullZone = try options["pullZoneURL"].map {
            try HTTPRemoteOptions.url($0.contains("://") ? $0 : "https://" + $0, provider: "Bunny", option: "pullZoneURL", example: "https://zone.b-cdn.net", allowHTTP: allowHTTP)
        }
        guard let scheme = BunnyTokenScheme(rawValue: options["tokenScheme"] ?? "hmac") else {
            throw BuckiaError(.invalidConfiguration, "tokenScheme must be hmac, advanced or basic.", path: "options.tokenScheme")
        }
        var lifetime = Duration.seconds(3600)
        if let text = options["publicURLExpirySeconds"] {
            guard let seconds = Int64(text), (1...31_536_000).contains(seconds) else {
                throw BuckiaError(.invalidConfiguration, "publicURLExpirySeconds must be a whole number from 1 to 31536000.", path: "options.publicURLExpirySeconds")
            }
            lifetime = .seconds(seconds)
        }
        let tokenKey = configuration.authConfig.credentials["tokenKey"].flatMap { $0.isEmpty ? nil : $0 }
        var settings = BunnySettings(
            zone: zone, accessKey: key, endpoint: endpoint, pullZone: pullZone, tokenKey: tokenKey, tokenScheme: scheme, publicURLLifetime: lifetime,
            concurrency: configuration.maxConcurrentOperations)
        settings.http = try HTTPRemoteOptions(options: options)
        return settings
    }
}

extension BunnySettings {
    /// The object's pull-zone URL signed with `options` (countries, address, token path, …),
    /// with the zone's token key.
    ///
    /// Signing needs no storage request, so a tool that holds only a remote's configuration
    /// (the command line's `url`) signs here without making a provider.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` without `pullZoneURL` or
    ///   the credential `tokenKey`.
    public func signedURL(for key: ObjectKey, _ options: BunnySigningOptions) throws -> URL {
        guard let pullZone, let tokenKey else {
            throw BuckiaError(
                .invalidConfiguration, "Signing a Bunny CDN URL needs the option pullZoneURL and the credential tokenKey (the pull zone's URL token key).",
                operation: "sign")
        }
        return try BunnyTokenFactory(securityKey: tokenKey).sign(try BunnyProvider.url(on: pullZone, key, operation: "sign"), options)
    }
}
