import BuckiaCore
import Foundation

/// How a user token is signed: the JWS `alg` of RFC 7518 and RFC 8037.
public enum UserTokenAlgorithm: String, Sendable, Hashable, Codable, CaseIterable {
    /// Ed25519 signatures (RFC 8037): the verifier holds only the public key, so a server that
    /// checks tokens cannot mint them. The default.
    case edDSA = "EdDSA"
    /// HMAC-SHA256 with a shared secret of at least 32 bytes: one party both issues and checks.
    case hs256 = "HS256"
}

/// The key a user token is signed with, and its key id (`kid`), which names it in every token
/// so that keys can be rotated: verifiers hold the old and the new key, each pinned to its
/// algorithm.
///
/// Its bytes never print; save ``encoded`` in a ``SecretStore``.
public struct UserTokenSigningKey: Sendable, Hashable, CustomStringConvertible {
    /// The key id every token signed with this key carries in its header.
    public let keyId: String
    /// The algorithm this key signs with, and the only one its tokens are accepted under.
    public let algorithm: UserTokenAlgorithm
    private let material: Secret

    /// A new random key: an Ed25519 private key, or a 32-byte HMAC secret.
    public static func generate(_ algorithm: UserTokenAlgorithm = .edDSA, keyId: String) throws -> UserTokenSigningKey {
        let bytes = algorithm == .edDSA ? try Ed25519.generatePrivateKey() : try SecureRandom.bytes(count: 32)
        return try UserTokenSigningKey(keyId: keyId, algorithm: algorithm, encoded: Secret(Base64URL.encode(Data(bytes))))
    }

    /// A key from its ``encoded`` form (base64url of the Ed25519 private key or the HMAC secret).
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a bad key id, text that is not
    ///   base64url, an Ed25519 key that is not 32 bytes, or an HMAC secret under 32 bytes.
    public init(keyId: String, algorithm: UserTokenAlgorithm, encoded: Secret) throws {
        try UserTokenKeyID.check(keyId)
        guard let bytes = Base64URL.decodeCanonical(encoded.exposedValue) else {
            throw BuckiaError(.invalidConfiguration, "The signing key \(keyId) is not base64url text.")
        }
        switch algorithm {
        case .edDSA where bytes.count != Ed25519.keyByteCount:
            throw BuckiaError(.invalidConfiguration, "The EdDSA signing key \(keyId) is \(bytes.count) bytes; an Ed25519 private key is 32.")
        case .hs256 where bytes.count < 32:
            throw BuckiaError(.invalidConfiguration, "The HS256 signing key \(keyId) is \(bytes.count) bytes; RFC 7518 asks for at least 32.")
        default: break
        }
        self.keyId = keyId
        self.algorithm = algorithm
        self.material = encoded
    }

    /// The key as base64url text, the form to keep in a secret store.
    public var encoded: Secret { material }

    var bytes: [UInt8] { Base64URL.decodeCanonical(material.exposedValue).map { Array($0) } ?? [] }

    /// The key that checks this key's tokens: the Ed25519 public key, or for HS256 the same secret.
    public func verificationKey() throws -> UserTokenVerificationKey {
        switch algorithm {
        case .edDSA: try UserTokenVerificationKey(keyId: keyId, algorithm: .edDSA, bytes: try Ed25519.publicKey(of: bytes))
        case .hs256: try UserTokenVerificationKey(keyId: keyId, algorithm: .hs256, bytes: bytes)
        }
    }

    package func sign(_ input: [UInt8]) throws -> [UInt8] {
        switch algorithm {
        case .edDSA: try Ed25519.sign(input, privateKey: bytes)
        case .hs256: HMAC.sha256(key: bytes, message: input).bytes
        }
    }

    public var description: String { "UserTokenSigningKey(\(algorithm.rawValue), kid: \(keyId), <REDACTED>)" }
}

/// A key that checks user tokens, pinned to one algorithm and one key id.
///
/// An EdDSA key is public and travels as a JSON Web Key (``jwk``), which PyJWT, jose and every
/// JWT library read; an HS256 key is the shared secret itself and never prints.
public struct UserTokenVerificationKey: Sendable, Hashable, CustomStringConvertible {
    /// The key id tokens name it by.
    public let keyId: String
    /// The only algorithm accepted for tokens naming this key id.
    public let algorithm: UserTokenAlgorithm
    let bytes: [UInt8]

    init(keyId: String, algorithm: UserTokenAlgorithm, bytes: [UInt8]) throws {
        try UserTokenKeyID.check(keyId)
        self.keyId = keyId
        self.algorithm = algorithm
        self.bytes = bytes
    }

    /// An Ed25519 public key.
    public init(keyId: String, ed25519PublicKey: [UInt8]) throws {
        guard ed25519PublicKey.count == Ed25519.keyByteCount else {
            throw BuckiaError(.invalidConfiguration, "An Ed25519 public key is 32 bytes; the one for \(keyId) is \(ed25519PublicKey.count).")
        }
        try self.init(keyId: keyId, algorithm: .edDSA, bytes: ed25519PublicKey)
    }

    /// A public key from its JSON Web Key (RFC 8037: `{"kty":"OKP","crv":"Ed25519","x":…,"kid":…}`).
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming what is missing or wrong.
    public init(jwk: String) throws {
        let data = Data(jwk.utf8)
        func bad(_ reason: String) -> BuckiaError {
            BuckiaError(.invalidConfiguration, "The JSON Web Key is not an Ed25519 public key Buckia can use: \(reason).")
        }
        let parsed: Any
        do {
            try JSONValidation.validate(data, maximumDepth: 2)
            parsed = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw bad("it is not JSON")
        }
        guard JSONDuplicateKeys.first(in: Array(data)) == nil, let object = parsed as? [String: Any] else {
            throw bad("it is not one JSON object without duplicate members")
        }
        guard object["kty"] as? String == "OKP", object["crv"] as? String == "Ed25519" else { throw bad("kty must be OKP and crv Ed25519") }
        guard object["d"] == nil else { throw bad("it holds a private key (d); give the public key only") }
        guard let kid = object["kid"] as? String else { throw bad("it has no kid") }
        if let alg = object["alg"], alg as? String != "EdDSA" { throw bad("its alg is not EdDSA") }
        guard let x = object["x"] as? String, let bytes = Base64URL.decodeCanonical(x), bytes.count == Ed25519.keyByteCount else {
            throw bad("x is not 32 bytes of base64url")
        }
        try self.init(keyId: kid, algorithm: .edDSA, bytes: Array(bytes))
    }

    /// The public key as a JSON Web Key, or nil for an HS256 key, whose material is secret.
    public var jwk: String? {
        guard algorithm == .edDSA else { return nil }
        return #"{"alg":"EdDSA","crv":"Ed25519","kid":"\#(keyId)","kty":"OKP","use":"sig","x":"\#(Base64URL.encode(Data(bytes)))"}"#
    }

    public var description: String {
        algorithm == .edDSA ? "UserTokenVerificationKey(EdDSA, kid: \(keyId))" : "UserTokenVerificationKey(HS256, kid: \(keyId), <REDACTED>)"
    }

    package func isValid(signature: [UInt8], of input: [UInt8]) -> Bool {
        switch algorithm {
        case .edDSA: Ed25519.isValid(signature: signature, of: input, publicKey: bytes)
        case .hs256: HMAC.constantTimeEquals(HMAC.sha256(key: bytes, message: input).bytes, signature)
        }
    }
}

package enum UserTokenKeyID {
    /// Key ids travel in headers, file names and secret-store contexts: 1–64 of `A–Z a–z 0–9 . _ -`.
    package static func check(_ keyId: String) throws {
        let allowed = keyId.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "-")
        }
        guard (1...64).contains(keyId.utf8.count), allowed else {
            throw BuckiaError(.invalidConfiguration, "The key id \(keyId.debugDescription) is not valid: use 1–64 letters, digits, '.', '_' or '-'.")
        }
    }
}

/// What a user token says: who it is for, when it is valid, and what it grants.
///
/// In the token these are the registered claims of RFC 7519 (`sub`, `aud`, `iss`, `iat`,
/// `nbf`, `exp`, `jti`) and the private claim `grants`:
/// `[{"prefix": "u1/", "allow": ["read", "list"]}, {"prefix": "u1/inbound/", "allow": ["write"]}]`.
public struct UserTokenClaims: Sendable, Hashable {
    /// The user (`sub`).
    public var subject: String
    /// Who the token is meant for (`aud`); a verifier accepts only tokens naming it.
    public var audience: [String]
    /// Who issued it (`iss`), when set.
    public var issuer: String?
    /// When it was issued (`iat`).
    public var issuedAt: Date
    /// When it starts to be valid (`nbf`).
    public var notBefore: Date
    /// When it stops being valid (`exp`).
    public var expiresAt: Date
    /// The token's unique id (`jti`), a KSUID.
    public var tokenId: String
    /// What it allows.
    public var grants: StorageGrants
}

/// A freshly issued token and what it says.
public struct IssuedUserToken: Sendable, Hashable, CustomStringConvertible {
    /// The compact JWS; a bearer credential, so it never prints.
    public var token: Secret
    /// Its claims.
    public var claims: UserTokenClaims
    /// The key id that signed it.
    public var keyId: String

    public var description: String {
        "IssuedUserToken(sub: \(claims.subject), kid: \(keyId), expires \(claims.expiresAt.formatted(.iso8601)), grants: \(claims.grants), <REDACTED>)"
    }
}

/// Issues user storage tokens: JSON Web Tokens (RFC 7519) signed with one key, that any JWT
/// library can read and verify.
///
/// ```swift
/// let key = try UserTokenSigningKey.generate(keyId: "2026-11")
/// let issuer = UserTokenIssuer(key: key)
/// let token = try issuer.issue(userId: "u1", grants: [StoragePermissions.readOnly.restrictToPath("u1/")], lifetime: .seconds(86_400))
/// ```
public struct UserTokenIssuer: Sendable {
    /// The longest lifetime a token may be issued for: 366 days.
    public static let maximumLifetime = Duration.seconds(366 * 86_400)

    /// The signing key.
    public let key: UserTokenSigningKey
    /// The audience every token names.
    public let audience: String
    /// The issuer every token names, if any.
    public let issuer: String?
    private let clock: @Sendable () -> Date

    /// Creates an issuer. `clock` is the time source (injected by tests).
    public init(key: UserTokenSigningKey, audience: String = "buckia", issuer: String? = nil, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.key = key
        self.audience = audience
        self.issuer = issuer
        self.clock = clock
    }

    /// A token for `userId` with `grants`, valid from `notBefore` (now by default) for `lifetime`.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for an empty user id, a lifetime that
    ///   is not positive or is over ``maximumLifetime``, or ``BuckiaError/Code/invalidPath`` for a
    ///   grant whose prefix grants nothing.
    public func issue(userId: String, grants: StorageGrants, lifetime: Duration, notBefore: Date? = nil) throws -> IssuedUserToken {
        guard !userId.isEmpty, !userId.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw BuckiaError(.invalidConfiguration, "The user id \(userId.debugDescription) is not one a token can carry; give a non-empty id without control characters.")
        }
        guard lifetime > .zero, lifetime <= Self.maximumLifetime else {
            throw BuckiaError(.invalidConfiguration, "A user token's lifetime must be more than 0 and at most 366 days; \(lifetime) was asked for.")
        }
        try grants.validate()
        let now = Date(timeIntervalSince1970: clock().timeIntervalSince1970.rounded(.down))
        let start = Date(timeIntervalSince1970: (notBefore ?? now).timeIntervalSince1970.rounded(.down))
        // A NumericDate is seconds since 1970; keep both ends where every JWT library reads them.
        let latest = 253_402_300_799 - Double(Self.maximumLifetime.components.seconds)
        guard (0...latest).contains(now.timeIntervalSince1970), (0...latest).contains(start.timeIntervalSince1970) else {
            throw BuckiaError(.invalidConfiguration, "A user token must start between 1970 and the year 9998; the clock or notBefore is outside that.")
        }
        let claims = UserTokenClaims(
            subject: userId, audience: [audience], issuer: issuer, issuedAt: now, notBefore: start,
            expiresAt: start.addingTimeInterval(Double(lifetime.components.seconds)), tokenId: try KSUID(date: now).description, grants: grants)
        let header = #"{"alg":"\#(key.algorithm.rawValue)","kid":"\#(key.keyId)","typ":"JWT"}"#
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(try UserTokenCoding.encode(claims))
        let signature = try key.sign(Array(input.utf8))
        return IssuedUserToken(token: Secret(input + "." + Base64URL.encode(Data(signature))), claims: claims, keyId: key.keyId)
    }
}

/// Why a token was refused. Its messages never include the token.
public struct UserTokenRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// The reasons a token is refused.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        /// Not a compact JWS with the claims Buckia needs.
        case malformed
        /// Its key id names no key this verifier holds.
        case unknownKey
        /// Its `alg` is not the one its key is pinned to (`none`, or HS256 against an EdDSA key).
        case algorithm
        /// The signature does not match.
        case signature
        /// Past its `exp`.
        case expired
        /// Before its `nbf`, or issued in the future.
        case notYetValid
        /// Not meant for this verifier's audience.
        case audience
        /// Issued by someone else than the issuer this verifier expects.
        case issuer
    }

    /// Why.
    public var reason: Reason
    /// The details, in words.
    public var detail: String

    /// Creates a refusal.
    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "The token is refused (\(reason.rawValue)): \(detail)" }

    /// The refusal as an ``BuckiaError/Code/unauthorized`` error.
    public var error: BuckiaError { BuckiaError(.unauthorized, description) }
}

/// Checks user tokens: the signature with the key its key id names, under that key's algorithm
/// only; the validity window within a bounded clock skew; the audience.
public struct UserTokenVerifier: Sendable {
    /// The most clock skew a verifier may allow: 5 minutes.
    public static let maximumLeeway = Duration.seconds(300)
    /// The longest token accepted, in bytes: a token with hundreds of grants fits.
    public static let maximumTokenLength = 64 * 1024

    private let keys: [String: UserTokenVerificationKey]
    /// The audience a token must name.
    public let audience: String
    /// The issuer a token must name, when set.
    public let issuer: String?
    /// How far the clocks of issuer and verifier may disagree.
    public let leeway: Duration
    private let clock: @Sendable () -> Date

    /// Creates a verifier over `keys` (the current one and those being rotated out).
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for two keys with one key id, or a
    ///   leeway that is negative or over ``maximumLeeway``.
    public init(
        keys: [UserTokenVerificationKey], audience: String = "buckia", issuer: String? = nil, leeway: Duration = .seconds(60),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        var byId: [String: UserTokenVerificationKey] = [:]
        for key in keys {
            guard byId.updateValue(key, forKey: key.keyId) == nil else {
                throw BuckiaError(.invalidConfiguration, "Two verification keys have the key id \(key.keyId); each key id names one key.")
            }
        }
        guard leeway >= .zero, leeway <= Self.maximumLeeway else {
            throw BuckiaError(.invalidConfiguration, "A token verifier's clock leeway must be 0–300 s; \(leeway) was given.")
        }
        self.keys = byId
        self.audience = audience
        self.issuer = issuer
        self.leeway = leeway
        self.clock = clock
    }

    /// The claims of `token` when it is valid now.
    ///
    /// - Throws: ``UserTokenRefusal`` with the first reason it fails.
    public func verify(_ token: String) throws(UserTokenRefusal) -> UserTokenClaims {
        let parts = try UserTokenCoding.split(token)
        let header = try UserTokenCoding.header(parts.header)
        guard let key = keys[header.keyId] else {
            throw UserTokenRefusal(.unknownKey, "its key id \(header.keyId.debugDescription) names no key this verifier holds")
        }
        guard header.algorithm == key.algorithm.rawValue else {
            throw UserTokenRefusal(
                .algorithm, "it is signed with \(header.algorithm.debugDescription), but key \(key.keyId) accepts \(key.algorithm.rawValue) only")
        }
        guard key.isValid(signature: parts.signature, of: parts.signingInput) else {
            throw UserTokenRefusal(.signature, "its signature does not match key \(key.keyId)")
        }
        let claims = try UserTokenCoding.claims(parts.payload)
        let now = clock()
        let slack = Double(leeway.components.seconds)
        if now.timeIntervalSince(claims.expiresAt) >= slack {
            throw UserTokenRefusal(.expired, "it expired at \(claims.expiresAt.formatted(.iso8601))")
        }
        if claims.notBefore.timeIntervalSince(now) > slack {
            throw UserTokenRefusal(.notYetValid, "it is valid from \(claims.notBefore.formatted(.iso8601))")
        }
        if claims.issuedAt.timeIntervalSince(now) > slack {
            throw UserTokenRefusal(.notYetValid, "it was issued at \(claims.issuedAt.formatted(.iso8601)), in the future")
        }
        guard claims.audience.contains(audience) else {
            throw UserTokenRefusal(.audience, "it is for \(claims.audience.map(\.debugDescription).joined(separator: ", ")), not \(audience.debugDescription)")
        }
        if let issuer, claims.issuer != issuer {
            throw UserTokenRefusal(.issuer, "it was issued by \(claims.issuer.map(\.debugDescription) ?? "no one named"), not \(issuer.debugDescription)")
        }
        return claims
    }

    /// What `token` says, without checking its signature or times: for `buckia token inspect`
    /// and for debugging. Never grant anything on what this returns.
    public static func inspect(_ token: String) throws(UserTokenRefusal) -> (algorithm: String, keyId: String, claims: UserTokenClaims) {
        let parts = try UserTokenCoding.split(token)
        let header = try UserTokenCoding.header(parts.header)
        return (header.algorithm, header.keyId, try UserTokenCoding.claims(parts.payload))
    }
}

/// The JSON and base64url of user tokens, strict on the way in.
enum UserTokenCoding {
    struct Parts {
        var header: Data
        var payload: Data
        var signature: [UInt8]
        var signingInput: [UInt8]
    }

    static func split(_ token: String) throws(UserTokenRefusal) -> Parts {
        guard token.utf8.count <= UserTokenVerifier.maximumTokenLength else {
            throw UserTokenRefusal(.malformed, "it is \(token.utf8.count) bytes; the limit is \(UserTokenVerifier.maximumTokenLength)")
        }
        let pieces = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard pieces.count == 3 else {
            throw UserTokenRefusal(.malformed, "a token is three base64url parts joined by '.'; this one has \(pieces.count)")
        }
        let names = ["header", "payload", "signature"]
        var decoded: [Data] = []
        for (piece, name) in zip(pieces, names) {
            guard let data = Base64URL.decodeCanonical(String(decoding: piece, as: UTF8.self)), !data.isEmpty else {
                throw UserTokenRefusal(.malformed, "its \(name) is not canonical, unpadded base64url")
            }
            decoded.append(data)
        }
        let signingInput = Array(token.utf8.prefix(pieces[0].count + 1 + pieces[1].count))
        return Parts(header: decoded[0], payload: decoded[1], signature: Array(decoded[2]), signingInput: signingInput)
    }

    /// Checks `data` is one JSON object with no member twice (two `exp` claims must not be a
    /// guess), then decodes it.
    static func decode<Value: Decodable>(_ type: Value.Type, _ data: Data, _ name: String) throws(UserTokenRefusal) -> Value {
        do {
            try JSONValidation.validate(data, maximumDepth: 4)
        } catch {
            throw UserTokenRefusal(.malformed, "its \(name) is not JSON: \(error)")
        }
        if let duplicate = JSONDuplicateKeys.first(in: Array(data)) {
            throw UserTokenRefusal(.malformed, "its \(name) names \(duplicate.debugDescription) twice")
        }
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.dataCorrupted(context) {
            let member = context.codingPath.first.map { " (\($0.stringValue))" } ?? ""
            throw UserTokenRefusal(.malformed, "its \(name) is not what Buckia reads\(member): \(context.debugDescription)")
        } catch {
            throw UserTokenRefusal(.malformed, "its \(name) is not a JSON object of the expected members")
        }
    }

    struct Header: Decodable {
        var alg: String?
        var kid: String?
        var typ: String?
        var crit: [String]?
    }

    static func header(_ data: Data) throws(UserTokenRefusal) -> (algorithm: String, keyId: String) {
        let header = try decode(Header.self, data, "header")
        guard let algorithm = header.alg else { throw UserTokenRefusal(.malformed, "its header has no alg") }
        guard let keyId = header.kid else { throw UserTokenRefusal(.malformed, "its header has no kid, and Buckia pins every key by its id") }
        if header.crit != nil { throw UserTokenRefusal(.malformed, "its header names critical extensions (crit), which Buckia does not implement") }
        if let type = header.typ, type.uppercased() != "JWT" { throw UserTokenRefusal(.malformed, "its header's typ is not JWT") }
        return (algorithm, keyId)
    }

    /// `aud`: one string or a list of them (RFC 7519 §4.1.3).
    struct Audience: Decodable {
        var values: [String]
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            do {
                values = [try container.decode(String.self)]
            } catch {
                values = try container.decode([String].self)
            }
        }
    }

    struct Payload: Decodable {
        var sub: String?
        var aud: Audience?
        var iss: String?
        var iat: Double?
        var nbf: Double?
        var exp: Double?
        var jti: String?
        var grants: StorageGrants?
    }

    /// A NumericDate claim (RFC 7519 §2): seconds since 1970, before year 10000.
    static func date(_ value: Double?, _ name: String) throws(UserTokenRefusal) -> Date? {
        guard let value else { return nil }
        guard value.isFinite, (0...253_402_300_799).contains(value) else {
            throw UserTokenRefusal(.malformed, "its \(name) claim is not a date (seconds since 1970, before year 10000)")
        }
        return Date(timeIntervalSince1970: value)
    }

    static func claims(_ data: Data) throws(UserTokenRefusal) -> UserTokenClaims {
        let payload = try decode(Payload.self, data, "payload")
        guard let subject = payload.sub, !subject.isEmpty else { throw UserTokenRefusal(.malformed, "it has no sub (user) claim") }
        guard let expiresAt = try date(payload.exp, "exp") else { throw UserTokenRefusal(.malformed, "it has no exp claim") }
        guard let issuedAt = try date(payload.iat, "iat") else { throw UserTokenRefusal(.malformed, "it has no iat claim") }
        let notBefore = try date(payload.nbf, "nbf") ?? issuedAt
        guard let tokenId = payload.jti else { throw UserTokenRefusal(.malformed, "it has no jti claim") }
        guard let grants = payload.grants else { throw UserTokenRefusal(.malformed, "it has no grants claim") }
        do {
            try grants.validate()
        } catch {
            throw UserTokenRefusal(.malformed, "its grants claim holds a grant Buckia refuses: \(error)")
        }
        return UserTokenClaims(
            subject: subject, audience: payload.aud?.values ?? [], issuer: payload.iss, issuedAt: issuedAt, notBefore: notBefore,
            expiresAt: expiresAt, tokenId: tokenId, grants: grants)
    }

    static func encode(_ claims: UserTokenClaims) throws -> Data {
        var object: [String: Any] = [
            "sub": claims.subject, "iat": Int64(claims.issuedAt.timeIntervalSince1970), "nbf": Int64(claims.notBefore.timeIntervalSince1970),
            "exp": Int64(claims.expiresAt.timeIntervalSince1970), "jti": claims.tokenId,
            "grants": claims.grants.grants.map { ["prefix": $0.prefix, "allow": $0.permissions.names] as [String: Any] },
        ]
        object["aud"] = claims.audience.count == 1 ? claims.audience[0] : claims.audience
        if let issuer = claims.issuer { object["iss"] = issuer }
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }
}

extension Base64URL {
    /// Decodes `text` only when it is the canonical unpadded base64url of its bytes: a token
    /// changed in its last character's spare bits decodes to the same bytes, and must still be
    /// refused.
    package static func decodeCanonical(_ text: String) -> Data? {
        guard let data = decode(text), encode(data) == text else { return nil }
        return data
    }
}
