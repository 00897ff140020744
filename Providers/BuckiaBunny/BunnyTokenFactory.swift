import BuckiaCore
import Foundation

/// The URL-signing schemes Bunny's CDN has published. A pull zone accepts each of them.
public enum BunnyTokenScheme: String, Sendable, CaseIterable, Codable {
    /// `token = base64url(MD5(key + path + expires [+ ip]))`: the first scheme, deprecated by
    /// Bunny; no country, path or limit parameters.
    case basic
    /// `token = base64url(SHA-256(key + signaturePath + expires [+ ip] + parameters))`: the
    /// 2020 scheme the seed describes, with `token_path`, countries and `limit`.
    case advanced
    /// `token = "HS256-" ["1-"] base64url(HMAC-SHA256(key, signaturePath + expires [+ ip bytes] +
    /// parameters))`: Bunny's current scheme (reference implementation 2.1.0).
    case hmac
}

/// What a signed Bunny CDN URL allows.
public struct BunnySigningOptions: Sendable, Hashable {
    /// The scheme (``BunnyTokenScheme/hmac``, Bunny's current one, by default).
    public var scheme: BunnyTokenScheme
    /// When the URL stops working (whole seconds).
    public var expires: Date
    /// The client address the URL is bound to (IPv4 or IPv6; the zone must validate IPs).
    public var ip: String?
    /// ISO 3166-1 country codes allowed (empty: all).
    public var countries: [String]
    /// ISO 3166-1 country codes refused.
    public var countriesBlocked: [String]
    /// A path prefix the token opens, instead of the exact URL path (a directory token).
    public var tokenPath: String?
    /// The download speed limit in kB/s (0 or nil: none).
    public var limit: Int?
    /// The path form (`https://host/bcdn_token=…&expires=…/path`), in which the token travels in
    /// the path so relative URLs (HLS segments) inherit it; otherwise the query form.
    public var pathForm: Bool
    /// Whether other query parameters stay outside the signature (``BunnyTokenScheme/hmac`` only).
    public var ignoreParameters: Bool

    public init(
        scheme: BunnyTokenScheme = .hmac, expires: Date, ip: String? = nil, countries: [String] = [], countriesBlocked: [String] = [],
        tokenPath: String? = nil, limit: Int? = nil, pathForm: Bool = false, ignoreParameters: Bool = false
    ) {
        self.scheme = scheme
        self.expires = expires
        self.ip = ip
        self.countries = countries
        self.countriesBlocked = countriesBlocked
        self.tokenPath = tokenPath
        self.limit = limit
        self.pathForm = pathForm
        self.ignoreParameters = ignoreParameters
    }
}

/// A token found in a URL: what was signed and for how long.
public struct BunnyToken: Sendable, Hashable {
    /// The scheme the token's shape says it is.
    public var scheme: BunnyTokenScheme
    /// The token as it appears in the URL.
    public var token: String
    /// When it expires.
    public var expires: Date
    /// The expiry exactly as the URL carries it, in whole seconds since 1970: what the
    /// signature covers (a `Date` cannot hold every `Int64`, so it is never converted back).
    public var expiresSeconds: Int64
    /// Whether it is bound to a client address (the address itself is not in the URL).
    public var boundToIP: Bool
    /// The signed parameters other than `token` and `expires`, as the URL carries them.
    public var parameters: [String: String]
    /// The request path the URL names (after the `bcdn_token` segment in the path form).
    public var path: String
    /// Whether the URL uses the path form.
    public var pathForm: Bool
}

/// Why ``BunnyTokenFactory/validate(_:now:ip:country:)`` refused a URL.
public enum BunnyTokenRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// The URL carries no token or expiry, or they are malformed.
    case malformed(String)
    /// The expiry has passed.
    case expired(Date)
    /// The signature does not match: a tampered path or parameter, another key, or (for
    /// IP-bound tokens) another address.
    case badSignature
    /// The request path is outside the signed `token_path`.
    case outsidePath(String)
    /// The country is not allowed, or blocked.
    case country(String)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed: \(why)"
        case .expired(let date): "expired at \(Int64(saturating: date.timeIntervalSince1970)) (\(date))"
        case .badSignature: "the signature does not match this key, path, parameters and address"
        case .outsidePath(let prefix): "the path is outside the signed token_path \(prefix)"
        case .country(let why): why
        }
    }
}

/// Signs and checks Bunny CDN URLs (token authentication), in all three published schemes.
///
/// The results agree with every test vector Bunny publishes (``BunnyTokenScheme/hmac``: the
/// reference implementation's `e2e/vectors.json` and unit tests; ``BunnyTokenScheme/advanced``:
/// the Ruby and C# vectors), see Docs/Bunny.md for where Bunny's own implementations disagree.
///
/// ```swift
/// let factory = BunnyTokenFactory(securityKey: Secret(key))
/// let url = try factory.sign(URL(string: "https://cdn.example.b-cdn.net/videos/a.mp4")!,
///                            BunnySigningOptions(expires: Date().addingTimeInterval(3600), tokenPath: "/videos/"))
/// ```
public struct BunnyTokenFactory: Sendable {
    /// Where the advanced scheme puts the client address: Bunny's documentation and its PHP
    /// and Node examples put it before the parameters; the reference Python, Java and Ruby code
    /// (and the Ruby vectors, generated from the Python) after them. The two agree when either
    /// is absent.
    public enum AddressPlacement: Sendable, Hashable {
        case beforeParameters, afterParameters
    }

    private let key: Secret
    /// The advanced scheme's address placement (``AddressPlacement/beforeParameters``, as the
    /// documentation and the one implementation reported working against the CDN have it).
    public var advancedAddressPlacement: AddressPlacement = .beforeParameters

    /// A factory for the pull zone whose URL token authentication key is `securityKey`.
    public init(securityKey: Secret) {
        key = securityKey
    }

    // MARK: Signing

    /// `url` signed with `options`. Query parameters already in `url` are signed too (unless
    /// `ignoreParameters`), so they cannot be changed afterwards.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a URL without a
    ///   host or path, an IP address that is not one, or options the scheme cannot carry.
    public func sign(_ url: URL, _ options: BunnySigningOptions) throws -> URL {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false), let scheme = components.scheme, let host = components.host else {
            throw BuckiaError(.invalidConfiguration, "Only an absolute URL can be signed: \(url.absoluteString).", operation: "sign")
        }
        let authority = scheme + "://" + host + (components.port.map { ":\($0)" } ?? "")
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        let expires = String(Int64(saturating: options.expires.timeIntervalSince1970.rounded(.down)))
        var parameters: [(String, String)] = []
        for item in components.queryItems ?? [] where item.name != "token" && item.name != "expires" {
            guard !parameters.contains(where: { $0.0 == item.name }) else {
                throw BuckiaError(.invalidConfiguration, "The URL carries the query parameter \(item.name) twice.", operation: "sign")
            }
            parameters.append((item.name, item.value ?? ""))
        }
        let token: String
        switch options.scheme {
        case .basic:
            guard options.countries.isEmpty, options.countriesBlocked.isEmpty, options.tokenPath == nil, (options.limit ?? 0) == 0, !options.ignoreParameters else {
                throw BuckiaError(
                    .invalidConfiguration, "The basic (MD5) scheme signs only a path, an expiry and an address; use the advanced or hmac scheme for the rest.",
                    operation: "sign")
            }
            token = try basicToken(path: path, expires: expires, ip: options.ip)
            parameters = []
        case .advanced, .hmac:
            if options.ignoreParameters {
                guard options.scheme == .hmac else {
                    throw BuckiaError(.invalidConfiguration, "Only the hmac scheme can leave query parameters unsigned.", operation: "sign")
                }
                parameters = [("token_ignore_params", "true")]
            } else {
                if !options.countries.isEmpty { parameters.append(("token_countries", options.countries.joined(separator: ","))) }
                if !options.countriesBlocked.isEmpty { parameters.append(("token_countries_blocked", options.countriesBlocked.joined(separator: ","))) }
                if let limit = options.limit, limit > 0 { parameters.append(("limit", String(limit))) }
            }
            if let tokenPath = options.tokenPath, !tokenPath.isEmpty { parameters.append(("token_path", tokenPath)) }
            parameters.sort { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
            let signaturePath = options.tokenPath.flatMap { $0.isEmpty ? nil : $0 } ?? path
            token = options.scheme == .hmac
                ? try hmacToken(signaturePath: signaturePath, expires: expires, ip: options.ip, parameters: parameters)
                : try advancedToken(signaturePath: signaturePath, expires: expires, ip: options.ip, parameters: parameters)
        }
        let encoded = parameters.map { "\($0.0)=\(Self.encode($0.1))" }.joined(separator: "&")
        let fields = "token=\(token)" + (encoded.isEmpty ? "" : "&\(encoded)") + "&expires=\(expires)"
        let signed = options.pathForm
            ? authority + "/bcdn_" + fields + path
            : authority + path + "?" + fields
        guard let result = URL(string: signed) else {
            throw BuckiaError(.invalidConfiguration, "The signed URL is not a valid URL: \(signed).", operation: "sign")
        }
        return result
    }

    func basicToken(path: String, expires: String, ip: String?) throws -> String {
        let message = key.exposedValue + path + expires + (ip ?? "")
        return Base64URL.encode(Data(try Hashing.digest(Data(message.utf8), .md5).bytes))
    }

    func advancedToken(signaturePath: String, expires: String, ip: String?, parameters: [(String, String)]) throws -> String {
        let signing = parameters.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let address = ip ?? ""
        let message = key.exposedValue + signaturePath + expires
            + (advancedAddressPlacement == .beforeParameters ? address + signing : signing + address)
        return Base64URL.encode(Data(Hashing.sha256(Data(message.utf8)).bytes))
    }

    func hmacToken(signaturePath: String, expires: String, ip: String?, parameters: [(String, String)]) throws -> String {
        var message = Data((signaturePath + expires).utf8)
        if let ip, !ip.isEmpty { message.append(try Self.addressBytes(ip)) }
        message.append(Data(parameters.map { "\($0.0)=\($0.1)" }.joined(separator: "&").utf8))
        let mac = HMAC.sha256(key: Data(key.exposedValue.utf8), message: message)
        let bound = ip.map { !$0.isEmpty } ?? false
        return "HS256-" + (bound ? "1-" : "") + Base64URL.encode(Data(mac.bytes))
    }

    /// An address as the hmac scheme signs it: 4 bytes for IPv4; for IPv6 its /64 (8 bytes)
    /// and 8 zero bytes.
    static func addressBytes(_ ip: String) throws -> Data {
        var v4 = in_addr()
        if inet_pton(AF_INET, ip, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Data($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, ip, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return Data(bytes.prefix(8)) + Data(repeating: 0, count: 8)
        }
        throw BuckiaError(.invalidConfiguration, "\(ip.debugDescription) is not an IPv4 or IPv6 address.", operation: "sign")
    }

    /// RFC 3986 encoding of a parameter value: everything but `A–Z a–z 0–9 - _ . ~`.
    static func encode(_ value: String) -> String {
        PercentEncoding.encode(value)
    }

    // MARK: Reading and checking

    /// The token in `url`, in either form.
    ///
    /// - Throws: ``BunnyTokenRefusal/malformed(_:)`` when the URL carries no token or expiry.
    public static func parse(_ url: URL) throws -> BunnyToken {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { throw BunnyTokenRefusal.malformed("not a URL") }
        var path = components.percentEncodedPath
        var fields: [(String, String)] = []
        var pathForm = false
        if path.hasPrefix("/bcdn_token=") {
            pathForm = true
            let rest = path.dropFirst("/bcdn_".count)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            fields = Self.pairs(String(rest[..<end]))
            path = end == rest.endIndex ? "/" : String(rest[end...])
        } else {
            fields = Self.pairs(components.percentEncodedQuery ?? "")
        }
        var parameters: [String: String] = [:]
        for (name, value) in fields {
            guard parameters[name] == nil else { throw BunnyTokenRefusal.malformed("the parameter \(name) appears twice") }
            parameters[name] = value
        }
        guard let token = parameters.removeValue(forKey: "token"), !token.isEmpty else { throw BunnyTokenRefusal.malformed("no token parameter") }
        guard let text = parameters.removeValue(forKey: "expires"), let seconds = Int64(text) else {
            throw BunnyTokenRefusal.malformed("no expires parameter, or not whole seconds")
        }
        let scheme: BunnyTokenScheme
        if token.hasPrefix("HS256-") {
            scheme = .hmac
        } else if token.count == 22 {
            scheme = .basic
        } else if token.count == 43 {
            scheme = .advanced
        } else {
            throw BunnyTokenRefusal.malformed("the token has the shape of no Bunny scheme")
        }
        return BunnyToken(
            scheme: scheme, token: token, expires: Date(timeIntervalSince1970: Double(seconds)), expiresSeconds: seconds, boundToIP: token.hasPrefix("HS256-1-"),
            parameters: parameters, path: path, pathForm: pathForm)
    }

    /// Checks `url` as the CDN would for a request from `ip` in `country` at `now`.
    ///
    /// - Returns: The token, when the URL is valid.
    /// - Throws: ``BunnyTokenRefusal`` saying why not.
    @discardableResult
    public func validate(_ url: URL, now: Date, ip: String? = nil, country: String? = nil) throws -> BunnyToken {
        let parsed = try Self.parse(url)
        guard now <= parsed.expires else { throw BunnyTokenRefusal.expired(parsed.expires) }
        let tokenPath = parsed.parameters["token_path"]
        if let tokenPath, !Self.path(parsed.path, isWithin: tokenPath) { throw BunnyTokenRefusal.outsidePath(tokenPath) }
        if let country {
            let code = country.uppercased()
            if let allowed = parsed.parameters["token_countries"], !allowed.uppercased().split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).contains(code) {
                throw BunnyTokenRefusal.country("\(code) is not among the allowed countries \(allowed)")
            }
            if let blocked = parsed.parameters["token_countries_blocked"], blocked.uppercased().split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).contains(code) {
                throw BunnyTokenRefusal.country("\(code) is among the blocked countries \(blocked)")
            }
        }
        let expires = String(parsed.expiresSeconds)
        var parameters = parsed.parameters.map { ($0.key, $0.value) }
        if parsed.parameters["token_ignore_params"] == "true" {
            // Other query parameters are outside the signature.
            parameters = parameters.filter { $0.0 == "token_ignore_params" || $0.0 == "token_path" }
        }
        parameters.sort { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
        let signaturePath = tokenPath ?? parsed.path
        let expected: String
        switch parsed.scheme {
        case .basic:
            expected = try basicToken(path: parsed.path, expires: expires, ip: ip)
        case .advanced:
            expected = try advancedToken(signaturePath: signaturePath, expires: expires, ip: ip, parameters: parameters)
        case .hmac:
            if parsed.boundToIP && (ip ?? "").isEmpty { throw BunnyTokenRefusal.badSignature }
            expected = try hmacToken(signaturePath: signaturePath, expires: expires, ip: parsed.boundToIP ? ip : nil, parameters: parameters)
        }
        guard HMAC.constantTimeEquals(Array(expected.utf8), Array(parsed.token.utf8)) else { throw BunnyTokenRefusal.badSignature }
        return parsed
    }

    /// Whether a request path lies under a signed `token_path`. The reference signers treat it
    /// as a plain prefix (the published vectors sign `/300kb` for `/300kb.jpg`), so this does too:
    /// end a directory's token path with `/` to keep `/abc` from opening `/abcdef`.
    static func path(_ path: String, isWithin prefix: String) -> Bool {
        path.hasPrefix(prefix)
    }

    /// `a=b&c=d` as pairs, values percent-decoded (a `+` stays a `+`: Bunny encodes spaces as `%20`).
    static func pairs(_ text: String) -> [(String, String)] {
        text.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            return (name, value)
        }
    }
}

extension BunnyTokenFactory: TokenFactory {
    /// A read-only directory token: the `bcdn_token=…&token_path=…&expires=…` segment that, put
    /// first in a pull-zone URL's path, opens every file under `pathPrefix` (the whole zone when
    /// nil) until the expiry. The signature covers only the path, so the segment works on any
    /// host of the zone.
    public func generateToken(options: AccessTokenOptions) throws -> AccessToken {
        try directoryToken(options, scheme: .hmac, now: Date(), operation: "generateToken")
    }

    /// The directory token for `options` at `now`, in `scheme` (the basic scheme has no token
    /// path, so it signs with hmac): what both this factory and the Bunny provider hand out.
    func directoryToken(_ options: AccessTokenOptions, scheme: BunnyTokenScheme, now: Date, operation: String) throws -> AccessToken {
        guard options.permissions.subtracting(.readOnly).isEmpty else {
            throw BuckiaError(.unsupported, "Bunny CDN tokens grant reading only; ask for .readOnly permissions.", operation: operation)
        }
        let prefix = "/" + (options.pathPrefix ?? "")
        let expires = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + Double(options.expiry.components.seconds)).rounded(.down))
        guard let base = URL(string: "https://zone.invalid" + PercentEncoding.encode(prefix, keepingSlash: true)) else {
            throw BuckiaError(.invalidPath, "The path prefix does not make a URL.", operation: operation, path: options.pathPrefix)
        }
        let signed = try sign(base, BunnySigningOptions(scheme: scheme == .basic ? .hmac : scheme, expires: expires, tokenPath: prefix, pathForm: true))
        // The first path segment, still percent-encoded (its token_path holds no raw '/').
        let path = URLComponents(url: signed, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        let segment = path.dropFirst().split(separator: "/", maxSplits: 1).first.map(String.init) ?? ""
        return AccessToken(value: Secret(segment), expiresAt: expires, permissions: .readOnly, pathPrefix: options.pathPrefix)
    }

    /// Whether a signed URL (or a bare `bcdn_token=…` segment) is valid now, for any address and
    /// country: a URL bound to an address, or limited to countries, needs
    /// ``validate(_:now:ip:country:)`` with the request's.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/unauthorized`` when `token` is not a Bunny token
    ///   at all, with the refusal as its cause (``BunnyTokenRefusal`` stays inside this type:
    ///   a caller of ``BuckiaCore/TokenFactory`` sees Buckia's errors only).
    public func validateToken(_ token: String) throws -> Bool {
        do {
            try validate(try Self.url(token), now: Date())
            return true
        } catch let refusal as BunnyTokenRefusal {
            if case .malformed = refusal { throw Self.malformed(refusal, operation: "validateToken") }
            return false
        }
    }

    /// - Throws: ``BuckiaCore/BuckiaError/Code/unauthorized`` when `token` is not a Bunny token.
    public func parseToken(_ token: String) throws -> TokenMetadata {
        let parsed: BunnyToken
        do {
            parsed = try Self.parse(try Self.url(token))
        } catch let refusal as BunnyTokenRefusal {
            throw Self.malformed(refusal, operation: "parseToken")
        }
        var attributes = parsed.parameters
        attributes["scheme"] = parsed.scheme.rawValue
        if parsed.boundToIP { attributes["boundToIP"] = "true" }
        let prefix = parsed.parameters["token_path"].map { String($0.drop { $0 == "/" }) }
        return TokenMetadata(expiresAt: parsed.expires, permissions: .readOnly, pathPrefix: prefix, attributes: attributes)
    }

    /// A refusal of a token's form, as the error every TokenFactory throws.
    private static func malformed(_ refusal: BunnyTokenRefusal, operation: String) -> BuckiaError {
        BuckiaError(.unauthorized, "This is not a Bunny CDN token (\(refusal)).", operation: operation, cause: refusal)
    }

    /// A token as a URL: a full URL as is; a bare `bcdn_token=…` segment on a placeholder host,
    /// for the path it was signed for (its token path, else the root).
    private static func url(_ token: String) throws -> URL {
        var text = token
        if !token.contains("://") {
            let segment = token.hasPrefix("bcdn_") ? String(token.dropFirst("bcdn_".count)) : token
            let path = pairs(segment).first { $0.0 == "token_path" }?.1 ?? "/"
            text = "https://zone.invalid/bcdn_" + segment + PercentEncoding.encode(path.hasPrefix("/") ? path : "/" + path, keepingSlash: true)
        }
        guard let url = URL(string: text) else { throw BunnyTokenRefusal.malformed("not a URL or a bcdn_token segment") }
        return url
    }
}

