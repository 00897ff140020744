import BuckiaCore
internal import BuckiaCrypto
import Foundation

/// A key an OpenID Connect issuer signs its tokens with, as its JSON Web Key Set publishes it:
/// an RSA key (tokens signed `RS256`, what Okta, Google, Auth0 and Keycloak use by default) or
/// an Ed25519 key (`EdDSA`, RFC 8037).
public struct WebIdentityKey: Sendable, Hashable {
    enum Material: Sendable, Hashable {
        case rsa(RSAPublicKey)
        case ed25519([UInt8])
    }

    let material: Material

    /// The RSA key with modulus `modulus` and exponent `exponent` (big-endian, as a JWK's `n`
    /// and `e`).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a modulus outside
    ///   2048–8192 bits or an exponent RSA signatures are not checked with.
    public static func rsa(modulus: [UInt8], exponent: [UInt8]) throws -> WebIdentityKey {
        do {
            return WebIdentityKey(material: .rsa(try RSAPublicKey(modulus: modulus, exponent: exponent)))
        } catch {
            throw BuckiaError(.invalidConfiguration, error.description)
        }
    }

    /// The Ed25519 public key `publicKey` (32 bytes).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` unless it is 32 bytes.
    public static func ed25519(publicKey: [UInt8]) throws -> WebIdentityKey {
        guard publicKey.count == Ed25519.keyByteCount else {
            throw BuckiaError(.invalidConfiguration, "An Ed25519 public key is 32 bytes; \(publicKey.count) were given.")
        }
        return WebIdentityKey(material: .ed25519(publicKey))
    }

    /// The one `alg` a token signed with this key may name: a key is pinned to its algorithm,
    /// so neither `none` nor `HS256` keyed with the public key (the classic confusion) passes.
    public var algorithm: String {
        switch material {
        case .rsa: "RS256"
        case .ed25519: "EdDSA"
        }
    }

    func isValid(signature: [UInt8], of input: [UInt8]) -> Bool {
        switch material {
        case .rsa(let key): key.isValidPKCS1v15SHA256Signature(signature, for: input)
        case .ed25519(let key): Ed25519.isValid(signature: signature, of: input, publicKey: key)
        }
    }
}

/// An issuer's JSON Web Key Set (RFC 7517 §5): its signing keys by key id.
///
/// Keys Buckia cannot use — another key type (`EC`), an encryption key (`"use": "enc"`), an
/// `alg` other than the key's own — are set aside with the reason, not refused: real issuers
/// publish such keys beside their signing keys. A key that claims to be a usable signing key
/// but is damaged refuses the whole set, as two keys with one key id do.
public struct JSONWebKeySet: Sendable, Hashable {
    /// The largest key set read: a few dozen RSA keys fit.
    public static let maximumBytes = 256 << 10

    /// The usable keys by key id.
    public let keys: [String: WebIdentityKey]
    /// What was set aside: each key id (or its position) with why.
    public let skipped: [String]

    /// The usable keys of `data`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` for a set that is not `{"keys": [...]}`,
    ///   a damaged RSA or Ed25519 signing key, a key id given twice, or no usable key at all.
    public init(json data: Data) throws {
        func bad(_ reason: String) -> BuckiaError {
            BuckiaError(.corrupt, "The issuer's JSON Web Key Set cannot be used: \(reason).")
        }
        let members: [[String: Any]]
        do {
            members = try JWKSetReader.members(data, maximumBytes: Self.maximumBytes)
        } catch {
            throw bad(error.reason)
        }
        var keys: [String: WebIdentityKey] = [:]
        var skipped: [String] = []
        for (index, member) in members.enumerated() {
            guard let kid = member["kid"] as? String, !kid.isEmpty else {
                skipped.append("key \(index + 1): it has no kid, and every key is pinned by its id")
                continue
            }
            if let use = member["use"], use as? String != "sig" {
                skipped.append("\(kid): its use is not sig")
                continue
            }
            let key: WebIdentityKey
            switch (member["kty"] as? String, member["crv"] as? String) {
            case ("RSA", _):
                if let alg = member["alg"], alg as? String != "RS256" {
                    skipped.append("\(kid): RSA with alg \(String(describing: alg)), and Buckia checks RS256 only")
                    continue
                }
                guard member["d"] == nil, member["p"] == nil else { throw bad("the key \(kid.debugDescription) holds a private key") }
                guard let n = (member["n"] as? String).flatMap(Base64URL.decode), let e = (member["e"] as? String).flatMap(Base64URL.decode) else {
                    throw bad("the RSA key \(kid.debugDescription) has no base64url n and e")
                }
                do {
                    key = WebIdentityKey(material: .rsa(try RSAPublicKey(modulus: Array(n), exponent: Array(e))))
                } catch {
                    throw bad("the key \(kid.debugDescription): \(error.reason)")
                }
            case ("OKP", "Ed25519"):
                if let alg = member["alg"], alg as? String != "EdDSA" {
                    skipped.append("\(kid): Ed25519 with alg \(String(describing: alg))")
                    continue
                }
                guard member["d"] == nil else { throw bad("the key \(kid.debugDescription) holds a private key") }
                guard let x = (member["x"] as? String).flatMap(Base64URL.decodeCanonical), x.count == Ed25519.keyByteCount else {
                    throw bad("the Ed25519 key \(kid.debugDescription) has no 32-byte base64url x")
                }
                key = WebIdentityKey(material: .ed25519(Array(x)))
            case (let type, let curve):
                skipped.append("\(kid): key type \(type ?? "none")\(curve.map { " on \($0)" } ?? ""), which Buckia does not check")
                continue
            }
            guard keys.updateValue(key, forKey: kid) == nil else { throw bad("the key id \(kid.debugDescription) is in it twice") }
        }
        guard !keys.isEmpty else {
            throw bad(skipped.isEmpty ? "it holds no keys" : "none of its keys is an RS256 or EdDSA signing key (\(skipped.joined(separator: "; ")))")
        }
        self.keys = keys
        self.skipped = skipped
    }

    /// A set of the given keys.
    public init(keys: [String: WebIdentityKey]) {
        self.keys = keys
        skipped = []
    }
}

/// Why a JSON Web Key Set's bytes are not one.
package struct JWKSetProblem: Error {
    package let reason: String
}

/// The outer shape of a JSON Web Key Set, checked strictly: bounded, one JSON object without
/// a member twice, a `keys` array of objects.
package enum JWKSetReader {
    package static func members(_ data: Data, maximumBytes: Int) throws(JWKSetProblem) -> [[String: Any]] {
        guard data.count <= maximumBytes else { throw JWKSetProblem(reason: "it is over \(maximumBytes >> 10) KiB") }
        let parsed: Any
        do {
            try JSONValidation.validate(data, maximumDepth: 4)
            parsed = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw JWKSetProblem(reason: "it is not JSON")
        }
        guard JSONDuplicateKeys.first(in: Array(data)) == nil, let object = parsed as? [String: Any], let list = object["keys"] as? [Any] else {
            throw JWKSetProblem(reason: "it is not one JSON object with a keys array")
        }
        var members: [[String: Any]] = []
        for item in list {
            guard let member = item as? [String: Any] else { throw JWKSetProblem(reason: "a member of keys is not an object") }
            members.append(member)
        }
        return members
    }
}

/// Where a verifier gets an issuer's keys.
public protocol WebIdentityKeySource: Sendable {
    /// The issuer's keys. `refresh` is set when a token names a key id the last set lacked: an
    /// issuer rotating its keys publishes the new one before signing with it, so a fresh copy
    /// may hold it. A source bounds how often it fetches, whatever callers ask.
    func keySet(refresh: Bool) async throws -> JSONWebKeySet
}

/// Keys given once: a file an operator keeps, or a test's.
public struct StaticWebIdentityKeys: WebIdentityKeySource {
    /// The keys.
    public let keys: JSONWebKeySet

    /// A source that always answers `keys`.
    public init(_ keys: JSONWebKeySet) { self.keys = keys }

    public func keySet(refresh: Bool) async throws -> JSONWebKeySet { keys }
}

/// What a verified ID token (or JWT access token) says about who logged in.
public struct WebIdentityClaims: Sendable, Hashable {
    /// `iss`: the issuer.
    public var issuer: String
    /// `sub`: the user, as the issuer names them (stable, never reassigned).
    public var subject: String
    /// `aud`: the clients the token is for.
    public var audience: [String]
    /// `azp`: the client the token was issued to, when the issuer says.
    public var authorizedParty: String?
    /// `exp`.
    public var expiresAt: Date
    /// `iat`, when given.
    public var issuedAt: Date?
    /// The key that signed it.
    public var keyId: String
}

/// Checks tokens an OpenID Connect issuer signed — its ID tokens, or access tokens it issues as
/// JWTs (RFC 9068) — as AWS STS's `AssumeRoleWithWebIdentity` does: the signature with the
/// issuer's published key its `kid` names, under that key's algorithm only; the issuer; an
/// audience this verifier accepts; the validity window within a bounded clock skew.
public struct WebIdentityVerifier: Sendable {
    /// The issuer a token must name (`iss`), exactly.
    public let issuer: String
    /// The audiences (client ids) of which a token must name one.
    public let audiences: Set<String>
    /// How far the issuer's clock and this one may disagree.
    public let leeway: Duration
    private let keys: any WebIdentityKeySource
    private let clock: @Sendable () -> Date

    /// A verifier of `issuer`'s tokens for `audiences`, with its keys from `keys`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for an empty issuer or
    ///   audience list, or a leeway outside 0–300 s.
    public init(
        issuer: String, audiences: Set<String>, keys: any WebIdentityKeySource, leeway: Duration = .seconds(60),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        guard !issuer.isEmpty else { throw BuckiaError(.invalidConfiguration, "A web identity verifier needs the issuer its tokens name (iss).") }
        guard !audiences.isEmpty, !audiences.contains("") else {
            throw BuckiaError(.invalidConfiguration, "A web identity verifier needs the audiences (client ids) it accepts, none of them empty.")
        }
        guard leeway >= .zero, leeway <= UserTokenVerifier.maximumLeeway else {
            throw BuckiaError(.invalidConfiguration, "A token verifier's clock leeway must be 0–300 s; \(leeway) was given.")
        }
        self.issuer = issuer
        self.audiences = audiences
        self.leeway = leeway
        self.keys = keys
        self.clock = clock
    }

    /// The claims of `token` when it is valid now.
    ///
    /// - Throws: ``UserTokenRefusal`` with the first reason it fails; its words never include
    ///   the token. A failure to get the issuer's keys is a ``BuckiaCore/BuckiaError``.
    public func verify(_ token: String) async throws -> WebIdentityClaims {
        let parts = try UserTokenCoding.split(token)
        let header = try UserTokenCoding.decode(UserTokenCoding.Header.self, parts.header, "header")
        guard let algorithm = header.alg else { throw UserTokenRefusal(.malformed, "its header has no alg") }
        guard let keyId = header.kid, !keyId.isEmpty else { throw UserTokenRefusal(.malformed, "its header has no kid naming the issuer's key") }
        if header.crit != nil { throw UserTokenRefusal(.malformed, "its header names critical extensions (crit), which Buckia does not implement") }
        if let type = header.typ, !["JWT", "AT+JWT", "APPLICATION/AT+JWT"].contains(type.uppercased()) {
            throw UserTokenRefusal(.malformed, "its header's typ \(type.debugDescription) is not a JWT's")
        }
        var set = try await keys.keySet(refresh: false)
        if set.keys[keyId] == nil { set = try await keys.keySet(refresh: true) }
        guard let key = set.keys[keyId] else {
            throw UserTokenRefusal(.unknownKey, "its key id \(keyId.debugDescription) names no key the issuer publishes")
        }
        guard algorithm == key.algorithm else {
            throw UserTokenRefusal(.algorithm, "it is signed with \(algorithm.debugDescription), but key \(keyId) is \(key.algorithm) only")
        }
        guard key.isValid(signature: parts.signature, of: parts.signingInput) else {
            throw UserTokenRefusal(.signature, "its signature does not match the issuer's key \(keyId)")
        }
        let payload = try UserTokenCoding.decode(Payload.self, parts.payload, "payload")
        guard let tokenIssuer = payload.iss else { throw UserTokenRefusal(.issuer, "it names no issuer (iss)") }
        guard tokenIssuer == issuer else { throw UserTokenRefusal(.issuer, "it was issued by \(tokenIssuer.debugDescription), not \(issuer.debugDescription)") }
        guard let subject = payload.sub, !subject.isEmpty else { throw UserTokenRefusal(.malformed, "it has no sub (user) claim") }
        let audience = payload.aud?.values ?? []
        guard audience.contains(where: audiences.contains) else {
            throw UserTokenRefusal(.audience, "it is for \(audience.isEmpty ? "no audience" : audience.map(\.debugDescription).joined(separator: ", ")), which this server does not accept")
        }
        guard let expiresAt = try UserTokenCoding.date(payload.exp, "exp") else { throw UserTokenRefusal(.malformed, "it has no exp claim") }
        let issuedAt = try UserTokenCoding.date(payload.iat, "iat")
        let notBefore = try UserTokenCoding.date(payload.nbf, "nbf")
        let now = clock()
        let slack = Double(leeway.components.seconds)
        if now.timeIntervalSince(expiresAt) >= slack {
            throw UserTokenRefusal(.expired, "it expired at \(expiresAt.formatted(.iso8601))")
        }
        if let notBefore, notBefore.timeIntervalSince(now) > slack {
            throw UserTokenRefusal(.notYetValid, "it is valid from \(notBefore.formatted(.iso8601))")
        }
        if let issuedAt, issuedAt.timeIntervalSince(now) > slack {
            throw UserTokenRefusal(.notYetValid, "it was issued at \(issuedAt.formatted(.iso8601)), in the future")
        }
        return WebIdentityClaims(
            issuer: tokenIssuer, subject: subject, audience: audience, authorizedParty: payload.azp, expiresAt: expiresAt, issuedAt: issuedAt,
            keyId: keyId)
    }

    struct Payload: Decodable {
        var iss: String?
        var sub: String?
        var aud: UserTokenCoding.Audience?
        var azp: String?
        var exp: Double?
        var iat: Double?
        var nbf: Double?
    }
}

/// Grants written once for every user, with `${sub}` standing for the user a login names:
/// `read,list:home/${sub}/`, `write:home/${sub}/inbound/`, `deliver:home/*/inbound/`. The shape
/// of MinIO's and AWS's policy variables, and what `buckia serve s3` gives each credential it
/// issues for a login.
///
/// `${sub}` must start a segment of a prefix (`home/${sub}/`, or `keys/${sub}.jwk` with a plain
/// suffix), and is filled in with the login's subject only when that subject is one safe segment: never `..`, a `/`, a `*` or anything a backend
/// could read as more than one folder name. A subject that is not is refused, so no issuer
/// can name its way into another user's folder.
public struct GrantTemplate: Sendable, Hashable, CustomStringConvertible {
    /// The variable a template's prefixes may hold.
    public static let subjectVariable = "${sub}"
    /// The longest subject filled in (OpenID Connect's bound on `sub`).
    public static let maximumSubjectBytes = 255

    /// The grants, their prefixes still holding `${sub}`.
    public let grants: [StorageGrant]

    /// A template of `grants`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for `${` anywhere but as a
    ///   whole `${sub}` segment, or a grant that would be refused once filled in.
    public init(_ grants: [StorageGrant]) throws {
        guard !grants.isEmpty else { throw BuckiaError(.invalidConfiguration, "A grant template needs at least one grant.") }
        for grant in grants {
            let segments = grant.prefix.split(separator: "/", omittingEmptySubsequences: false)
            for segment in segments where segment.contains("$") || segment.contains("{") || segment.contains("}") {
                guard Self.isSubjectSegment(segment) else {
                    throw BuckiaError(
                        .invalidConfiguration,
                        "The grant template \(grant) uses \(String(segment).debugDescription); the one variable is \(Self.subjectVariable), starting a folder or file name (home/${sub}/, keys/${sub}.jwk).")
                }
            }
        }
        self.grants = grants
        _ = try self.grants(subject: "user")
    }

    /// A template of grants written as `buckia token issue --grant` takes them
    /// (`read,list:home/${sub}/`).
    public init(parsing texts: [String]) throws {
        try self.init(try texts.map(StorageGrant.init(parsing:)))
    }

    /// Whether `segment` is `${sub}`, or `${sub}` and a plain suffix (`${sub}.jwk`: letters,
    /// digits, `.`, `_`, `-`). With a safe subject either is still exactly one segment.
    static func isSubjectSegment(_ segment: Substring) -> Bool {
        guard segment.hasPrefix(subjectVariable) else { return false }
        return segment.dropFirst(subjectVariable.count).utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// The grants for the user `subject`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/permissionDenied`` when `subject` is not one
    ///   safe folder name, naming why.
    public func grants(subject: String) throws -> StorageGrants {
        if let reason = Self.unsafety(ofSubject: subject) {
            throw BuckiaError(.permissionDenied, "The login's subject \(subject.debugDescription) cannot name a folder: \(reason).")
        }
        let filled = StorageGrants(
            grants.map { grant in
                let segments = grant.prefix.split(separator: "/", omittingEmptySubsequences: false)
                return StorageGrant(
                    grant.permissions,
                    prefix: segments.map { Self.isSubjectSegment($0) ? subject + $0.dropFirst(Self.subjectVariable.count) : String($0) }.joined(separator: "/"))
            })
        do {
            try filled.validate()
        } catch let error as BuckiaError {
            throw BuckiaError(.permissionDenied, "The login's subject \(subject.debugDescription) cannot name a folder: \(error.message)")
        }
        return filled
    }

    /// Why `subject` is not one safe segment, or nil when it is: 1 to 255 bytes of printable
    /// ASCII other than `/`, `\`, `*`, `%`, `$`, `{`, `}` and space, and not `.` or `..`. The
    /// grants it fills are then checked as every grant is.
    public static func unsafety(ofSubject subject: String) -> String? {
        if subject.isEmpty { return "it is empty" }
        if subject.utf8.count > maximumSubjectBytes { return "it is over \(maximumSubjectBytes) bytes" }
        if subject == "." || subject == ".." { return "it is \(subject.debugDescription), which names a folder above or the same" }
        for byte in subject.utf8 {
            switch byte {
            case UInt8(ascii: "/"), UInt8(ascii: "\\"): return "it holds a path separator"
            case UInt8(ascii: "*"): return "it holds *, which a grant reads as any folder"
            case UInt8(ascii: "%"): return "it holds %, which a decoding backend could read as an escape"
            case UInt8(ascii: "$"), UInt8(ascii: "{"), UInt8(ascii: "}"): return "it holds $, { or }, so a filled-in grant could read as a template"
            case 0x21...0x7E: continue
            default: return "it holds a byte that is not printable ASCII (0x\(String(byte, radix: 16, uppercase: true)))"
            }
        }
        return nil
    }

    public var description: String { grants.map(\.description).joined(separator: " ") }
}

extension StorageGrant {
    /// A grant as `buckia token issue --grant` takes it: `PERMS:PREFIX`, such as `read,list:u1/`;
    /// `*` is the whole bucket (`read:*`).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a missing `:`, an
    ///   unknown permission, or an empty prefix (what `read:$PREFIX` gives when the variable is
    ///   unset: the whole bucket is written out as `*`); ``BuckiaCore/BuckiaError/Code/invalidPath``
    ///   for a prefix that grants nothing.
    public init(parsing text: String) throws {
        guard let colon = text.firstIndex(of: ":") else {
            throw BuckiaError(.invalidConfiguration, "A grant is PERMS:PREFIX, such as read,list:u1/; \(text.debugDescription) has no ':'.")
        }
        var permissions: StoragePermissions = []
        for name in text[..<colon].split(separator: ",", omittingEmptySubsequences: false) {
            guard let permission = StoragePermissions(name: String(name)) else {
                throw BuckiaError(.invalidConfiguration, "\(String(name).debugDescription) is not a permission; use read, write, delete, list or deliver.")
            }
            permissions.insert(permission)
        }
        let written = String(text[text.index(after: colon)...])
        guard !written.isEmpty else {
            throw BuckiaError(
                .invalidConfiguration,
                "The grant \(text.debugDescription) has an empty prefix, which would grant the whole bucket (an unset shell variable gives one); write \(text)* to grant the whole bucket, or name the folder (\(text)u1/).")
        }
        self.init(permissions, prefix: written == "*" ? "" : written)
    }
}
