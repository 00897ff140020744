import BuckiaCore
import Foundation

/// Makes the identity of a resource: two locations with one identifier are one cache entry.
///
/// The seed's `ResourceIdentifierProvider`. Identifiers are hex digests, so they are safe as
/// file names whatever the location holds; a custom provider's identifier is checked before it
/// names anything on disk.
public protocol ResourceIdentifierProvider: Sendable {
    /// The identifier of the resource at `location`.
    func identifier(for location: ResourceLocation) throws -> String
    /// A name for this provider's rules, part of every entry's key: entries made under other
    /// rules are not mistaken for this one's.
    var ruleName: String { get }
}

/// Where a resource comes from: an http(s) URL, or a path on a configured remote.
public enum ResourceLocation: Hashable, Sendable, CustomStringConvertible {
    case url(URL)
    /// `remote:path` on a provider known by that name.
    case remote(name: String, path: String)

    /// The text identifiers hash: the URL as written, less any user name and password, or
    /// `remote:path`. Credentials never name an entry nor reach the index.
    public var text: String {
        switch self {
        case .url(let url): Self.withoutCredentials(url).absoluteString
        case .remote(let name, let path): "\(name):\(path)"
        }
    }

    /// Whether the location is a URL with a user name or password in it (`https://user:pw@host/`).
    public var holdsCredentials: Bool {
        guard case .url(let url) = self else { return false }
        return url.user != nil || url.password != nil
    }

    /// `url` with its user name and password removed.
    static func withoutCredentials(_ url: URL) -> URL {
        guard url.user != nil || url.password != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.user = nil
        components.password = nil
        return components.url ?? url
    }

    /// The last path component, for file names (may be empty).
    public var lastComponent: String {
        switch self {
        case .url(let url): url.lastPathComponent == "/" ? "" : url.lastPathComponent
        case .remote(_, let path): path.split(separator: "/").last.map(String.init) ?? ""
        }
    }

    /// The host (for a URL) or the remote's name.
    public var origin: String {
        switch self {
        case .url(let url): url.host?.lowercased() ?? "unknown"
        case .remote(let name, _): name
        }
    }

    public var description: String { text }
}

/// The seed's default: the MD5 of the location as written, in hex.
public struct MD5IdentifierProvider: ResourceIdentifierProvider {
    public init() {}
    public var ruleName: String { "md5" }
    public func identifier(for location: ResourceLocation) throws -> String {
        try Hashing.digest(Data(location.text.utf8), .md5).hex
    }
}

/// SHA-256 of the location as written, in hex.
public struct SHA256IdentifierProvider: ResourceIdentifierProvider {
    public init() {}
    public var ruleName: String { "sha256" }
    public func identifier(for location: ResourceLocation) throws -> String {
        Hashing.sha256Hex(Data(location.text.utf8))
    }
}

/// Identifies a URL by what it names, not how it is written: the scheme and host lowercased, a
/// default port dropped, the fragment dropped, and the query's parameters kept only when
/// `keepParameter` says so, sorted. A signed CDN URL whose signature and expiry rotate
/// (`X-Amz-Signature`, `Expires`, `token`) is one entry when those are filtered out.
public struct NormalizingIdentifierProvider: ResourceIdentifierProvider {
    /// The parameters signed URLs of S3, CloudFront, Google Cloud Storage, Azure and Bunny
    /// rotate: dropped by ``signatureParameters``.
    public static let rotatingParameters: Set<String> = [
        "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-expires", "x-amz-signedheaders", "x-amz-signature",
        "x-amz-security-token", "x-amz-checksum-mode", "expires", "signature", "key-pair-id", "policy", "x-goog-algorithm",
        "x-goog-credential", "x-goog-date", "x-goog-expires", "x-goog-signedheaders", "x-goog-signature", "sig", "se", "st",
        "sp", "sv", "sr", "spr", "skoid", "sktid", "skt", "ske", "sks", "skv", "token", "token_path",
    ]

    /// Keeps every parameter except those signed URLs rotate.
    public static let signatureParameters: @Sendable (String) -> Bool = { !rotatingParameters.contains($0.lowercased()) }

    let keepParameter: @Sendable (String) -> Bool
    let hash: any ResourceIdentifierProvider
    let name: String

    /// - Parameters:
    ///   - name: Names these rules (part of each entry's key).
    ///   - keepParameter: Whether a query parameter (by name) is part of the identity.
    ///   - hash: Hashes the normalized text (MD5 by default).
    public init(
        name: String = "normalized", keepParameter: @escaping @Sendable (String) -> Bool = Self.signatureParameters,
        hash: any ResourceIdentifierProvider = MD5IdentifierProvider()
    ) {
        self.name = name
        self.keepParameter = keepParameter
        self.hash = hash
    }

    public var ruleName: String { "\(name)+\(hash.ruleName)" }

    /// Whether every parameter in ``rotatingParameters`` is left out of the identity.
    var dropsSignatures: Bool { Self.rotatingParameters.allSatisfy { !keepParameter($0) } }

    public func identifier(for location: ResourceLocation) throws -> String {
        try hash.identifier(for: normalized(location))
    }

    /// The location as this provider sees it.
    public func normalized(_ location: ResourceLocation) -> ResourceLocation {
        guard case .url(let url) = location, var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return location }
        parts.scheme = parts.scheme?.lowercased()
        parts.host = parts.host?.lowercased()
        if (parts.scheme == "https" && parts.port == 443) || (parts.scheme == "http" && parts.port == 80) { parts.port = nil }
        parts.fragment = nil
        if parts.percentEncodedPath.isEmpty { parts.percentEncodedPath = "/" }
        let kept = (parts.percentEncodedQueryItems ?? []).filter { keepParameter($0.name) }
        parts.percentEncodedQueryItems = kept.isEmpty ? nil : kept.sorted { ($0.name, $0.value ?? "") < ($1.name, $1.value ?? "") }
        return parts.url.map(ResourceLocation.url) ?? location
    }
}
