import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

@testable import BuckiaSecurity

/// A clock the test moves by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = start }
    var now: Date { lock.withLock { current } }
    func advance(_ seconds: Double) { lock.withLock { current = current.addingTimeInterval(seconds) } }
    var source: @Sendable () -> Date { { self.now } }
}

private let seedGrants: StorageGrants = [
    StoragePermissions.readOnly.restrictToPath("u1/"),
    StoragePermissions.write.restrictToPath("u1/inbound/"),
    StoragePermissions.deliver.restrictToPath("u2/inbound/"),
]

private func base64url(_ text: String) -> String { Base64URL.encode(Data(text.utf8)) }

@Suite("User tokens (JWT)")
struct UserTokenTests {
    let clock = TestClock()

    func pair(_ algorithm: UserTokenAlgorithm = .edDSA, keyId: String = "k1") throws -> (UserTokenIssuer, UserTokenVerifier) {
        let key = try UserTokenSigningKey.generate(algorithm, keyId: keyId)
        return (
            UserTokenIssuer(key: key, clock: clock.source),
            try UserTokenVerifier(keys: [try key.verificationKey()], clock: clock.source)
        )
    }

    @Test("An issued token verifies and carries the grants, user and times", arguments: UserTokenAlgorithm.allCases)
    func roundTrip(_ algorithm: UserTokenAlgorithm) throws {
        let (issuer, verifier) = try pair(algorithm)
        let issued = try issuer.issue(userId: "u1", grants: seedGrants, lifetime: .seconds(86_400))
        let claims = try verifier.verify(issued.token.exposedValue)
        #expect(claims.subject == "u1")
        #expect(claims.grants == seedGrants)
        #expect(claims.audience == ["buckia"])
        #expect(claims.expiresAt == clock.now.addingTimeInterval(86_400))
        #expect(KSUID(claims.tokenId) != nil)
        #expect(claims.grants.permits(.write, key: "u1/inbound/x"))
        #expect(!claims.grants.permits(.write, key: "u1/x"))
        #expect(!"\(issued)".contains(issued.token.exposedValue))
    }

    @Test("A token changed in any one character is refused", arguments: UserTokenAlgorithm.allCases)
    func everyBytePosition(_ algorithm: UserTokenAlgorithm) throws {
        let (issuer, verifier) = try pair(algorithm)
        let token = Array(try issuer.issue(userId: "u1", grants: seedGrants, lifetime: .seconds(3600)).token.exposedValue.utf8)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var accepted: [Int] = []
        for position in token.indices {
            // Every other base64url character, and '.', in this position.
            for replacement in alphabet + [UInt8(ascii: ".")] where replacement != token[position] {
                var tampered = token
                tampered[position] = replacement
                do {
                    _ = try verifier.verify(String(decoding: tampered, as: UTF8.self))
                    accepted.append(position)
                } catch {}
            }
        }
        #expect(accepted.isEmpty, "changed tokens accepted at positions \(accepted)")
        #expect(token.count > 200)
    }

    @Test("Expired, not yet valid and future-issued tokens are refused with their reasons; the leeway is bounded")
    func times() throws {
        let (issuer, verifier) = try pair()
        let token = try issuer.issue(userId: "u1", grants: seedGrants, lifetime: .seconds(600)).token.exposedValue
        clock.advance(600 + 59)
        _ = try verifier.verify(token)  // within the 60 s leeway
        clock.advance(1)
        #expect(throws: UserTokenRefusal(.expired, "it expired at 2027-01-15T08:10:00Z")) { try verifier.verify(token) }

        let later = try issuer.issue(userId: "u1", grants: seedGrants, lifetime: .seconds(600), notBefore: clock.now.addingTimeInterval(3600))
        let refusal = #expect(throws: UserTokenRefusal.self) { try verifier.verify(later.token.exposedValue) }
        #expect(refusal?.reason == .notYetValid)

        let skewed = TestClock(clock.now.addingTimeInterval(-120))
        let fromTheFuture = try UserTokenIssuer(key: issuer.key, clock: clock.source).issue(userId: "u1", grants: seedGrants, lifetime: .seconds(600))
        let slow = try UserTokenVerifier(keys: [try issuer.key.verificationKey()], clock: skewed.source)
        #expect((#expect(throws: UserTokenRefusal.self) { try slow.verify(fromTheFuture.token.exposedValue) })?.reason == .notYetValid)

        #expect(throws: BuckiaError.self) { try UserTokenVerifier(keys: [], leeway: .seconds(301)) }
    }

    @Test("A token signed by another key with the same key id fails its signature; an unknown key id is named")
    func otherKeys() throws {
        let (issuer, _) = try pair(keyId: "k1")
        let (_, otherVerifier) = try pair(keyId: "k1")
        let token = try issuer.issue(userId: "u1", grants: seedGrants, lifetime: .seconds(600)).token.exposedValue
        #expect((#expect(throws: UserTokenRefusal.self) { try otherVerifier.verify(token) })?.reason == .signature)
        let (_, k2) = try pair(keyId: "k2")
        #expect((#expect(throws: UserTokenRefusal.self) { try k2.verify(token) })?.reason == .unknownKey)
    }

    @Test("Key rotation: a verifier holding the old and the new key accepts both, each under its own algorithm")
    func rotation() throws {
        let old = try UserTokenSigningKey.generate(.hs256, keyId: "2026-10")
        let new = try UserTokenSigningKey.generate(.edDSA, keyId: "2026-11")
        let verifier = try UserTokenVerifier(keys: [try old.verificationKey(), try new.verificationKey()], clock: clock.source)
        for key in [old, new] {
            let token = try UserTokenIssuer(key: key, clock: clock.source).issue(userId: "u1", grants: seedGrants, lifetime: .seconds(60))
            #expect(try verifier.verify(token.token.exposedValue).subject == "u1")
        }
        #expect(throws: BuckiaError.self) { try UserTokenVerifier(keys: [try old.verificationKey(), try old.verificationKey()]) }
    }

    @Test("alg none and algorithm confusion are refused")
    func algorithmAttacks() throws {
        let key = try UserTokenSigningKey.generate(.edDSA, keyId: "k1")
        let verifier = try UserTokenVerifier(keys: [try key.verificationKey()], clock: clock.source)
        let genuine = try UserTokenIssuer(key: key, clock: clock.source).issue(userId: "u1", grants: seedGrants, lifetime: .seconds(600))
        let payload = genuine.token.exposedValue.split(separator: ".")[1]

        // alg none, with no signature and with one.
        let none = base64url(#"{"alg":"none","kid":"k1","typ":"JWT"}"#) + "." + payload
        #expect((#expect(throws: UserTokenRefusal.self) { try verifier.verify(none + ".") })?.reason == .malformed)
        #expect((#expect(throws: UserTokenRefusal.self) { try verifier.verify(none + ".AAAA") })?.reason == .algorithm)

        // HS256 signed with the Ed25519 public key as the HMAC secret: the classic confusion.
        let publicKey = try key.verificationKey().bytes
        let header = base64url(#"{"alg":"HS256","kid":"k1","typ":"JWT"}"#)
        let input = header + "." + payload
        let mac = HMAC.sha256(key: publicKey, message: Array(input.utf8)).bytes
        let confused = input + "." + Base64URL.encode(Data(mac))
        let refusal = #expect(throws: UserTokenRefusal.self) { try verifier.verify(confused) }
        #expect(refusal?.reason == .algorithm)
        #expect(refusal?.detail == #"it is signed with "HS256", but key k1 accepts EdDSA only"#)

        // The same bytes would verify if the algorithm were taken from the header: prove the
        // test constructs a real confusion token.
        let hmacKey = try UserTokenVerificationKey(keyId: "k1", algorithm: .hs256, bytes: publicKey)
        #expect(try UserTokenVerifier(keys: [hmacKey], clock: clock.source).verify(confused).subject == "u1")
    }

    @Test("The audience and issuer must match")
    func audience() throws {
        let key = try UserTokenSigningKey.generate(keyId: "k1")
        let token = try UserTokenIssuer(key: key, audience: "app-a", issuer: "https://id.example", clock: clock.source)
            .issue(userId: "u1", grants: seedGrants, lifetime: .seconds(60)).token.exposedValue
        let forB = try UserTokenVerifier(keys: [try key.verificationKey()], audience: "app-b", clock: clock.source)
        #expect((#expect(throws: UserTokenRefusal.self) { try forB.verify(token) })?.reason == .audience)
        let otherIssuer = try UserTokenVerifier(keys: [try key.verificationKey()], audience: "app-a", issuer: "https://evil.example", clock: clock.source)
        #expect((#expect(throws: UserTokenRefusal.self) { try otherIssuer.verify(token) })?.reason == .issuer)
        let right = try UserTokenVerifier(keys: [try key.verificationKey()], audience: "app-a", issuer: "https://id.example", clock: clock.source)
        #expect(try right.verify(token).issuer == "https://id.example")
    }

    /// Signs `header` and `payload` (JSON text) with `key`, as an attacker holding the key would.
    func forge(_ header: String, _ payload: String, key: UserTokenSigningKey) throws -> String {
        let input = base64url(header) + "." + base64url(payload)
        return input + "." + Base64URL.encode(Data(try key.sign(Array(input.utf8))))
    }

    static let malformedPayloads: [(String, String)] = [
        (#"{"sub":"u1","iat":1800000000,"exp":1800000600,"jti":"x","aud":"buckia","grants":[],"exp":1900000000}"#, "exp twice"),
        (#"{"sub":"u1","iat":1800000000,"exp":1800000600,"jti":"x","aud":"buckia","grants":[],"\u0065xp":1900000000}"#, "exp twice, once escaped"),
        (#"{"sub":"u1","iat":1800000000,"exp":true,"jti":"x","aud":"buckia","grants":[]}"#, "exp is a boolean"),
        (#"{"sub":"u1","iat":1800000000,"exp":"1800000600","jti":"x","aud":"buckia","grants":[]}"#, "exp is a string"),
        (#"{"sub":"u1","iat":1800000000,"exp":1e300,"jti":"x","aud":"buckia","grants":[]}"#, "exp past year 9999"),
        (#"{"sub":"u1","iat":1800000000,"jti":"x","aud":"buckia","grants":[]}"#, "no exp"),
        (#"{"iat":1800000000,"exp":1800000600,"jti":"x","aud":"buckia","grants":[]}"#, "no sub"),
        (#"{"sub":"u1","iat":1800000000,"exp":1800000600,"jti":"x","aud":"buckia"}"#, "no grants"),
        (#"{"sub":"u1","iat":1800000000,"exp":1800000600,"jti":"x","aud":"buckia","grants":[{"prefix":"../","allow":["read"]}]}"#, "a grant escaping"),
        (#"{"sub":"u1","iat":1800000000,"exp":1800000600,"jti":"x","aud":"buckia","grants":[{"prefix":"u1/","allow":["root"]}]}"#, "an unknown permission"),
        (#"{"sub":"u1","iat":1800000000,"exp":1800000600,"jti":"x","aud":7,"grants":[]}"#, "aud a number"),
        (#"[1,2,3]"#, "not an object"),
        (#"{"sub":"u1","#, "truncated JSON"),
    ]

    @Test("A validly signed token with malformed claims is refused as malformed", arguments: malformedPayloads)
    func malformedClaims(_ payload: String, _ note: String) throws {
        let key = try UserTokenSigningKey.generate(keyId: "k1")
        let verifier = try UserTokenVerifier(keys: [try key.verificationKey()], clock: clock.source)
        let token = try forge(#"{"alg":"EdDSA","kid":"k1","typ":"JWT"}"#, payload, key: key)
        #expect((#expect(throws: UserTokenRefusal.self) { try verifier.verify(token) })?.reason == .malformed, "\(note)")
    }

    @Test(
        "Malformed headers and shapes are refused as malformed",
        arguments: [
            #"{"alg":"EdDSA","typ":"JWT"}"#, #"{"kid":"k1"}"#, #"{"alg":"EdDSA","kid":"k1","crit":["exp"]}"#,
            #"{"alg":"EdDSA","kid":"k1","typ":"JOSE+JSON"}"#, #"{"alg":"EdDSA","kid":"k1","kid":"k2"}"#,
        ])
    func malformedHeaders(_ header: String) throws {
        let key = try UserTokenSigningKey.generate(keyId: "k1")
        let verifier = try UserTokenVerifier(keys: [try key.verificationKey()], clock: clock.source)
        let payload = #"{"sub":"u1","iat":1800000000,"exp":1800000600,"jti":"x","aud":"buckia","grants":[]}"#
        #expect((#expect(throws: UserTokenRefusal.self) { try verifier.verify(try forge(header, payload, key: key)) })?.reason == .malformed)
        for shape in ["", "a", "a.b", "a.b.c.d", "..", String(repeating: "A", count: 70_000)] {
            #expect((#expect(throws: UserTokenRefusal.self) { try verifier.verify(shape) })?.reason == .malformed)
        }
    }

    @Test("A signing key's description and a refusal never show key or token bytes")
    func redaction() throws {
        let key = try UserTokenSigningKey.generate(.hs256, keyId: "k1")
        #expect(!"\(key)".contains(key.encoded.exposedValue))
        #expect(!String(reflecting: key).contains(key.encoded.exposedValue))
        #expect(!"\(try key.verificationKey())".contains(key.encoded.exposedValue))
        #expect(try key.verificationKey().jwk == nil)
    }

    @Test("The public key travels as a JWK and comes back")
    func jwk() throws {
        let key = try UserTokenSigningKey.generate(keyId: "k1")
        let jwk = try #require(try key.verificationKey().jwk)
        #expect(try UserTokenVerificationKey(jwk: jwk) == (try key.verificationKey()))
        #expect(throws: BuckiaError.self) { try UserTokenVerificationKey(jwk: #"{"kty":"OKP","crv":"Ed25519","kid":"k","x":"AAAA"}"#) }
        #expect(throws: BuckiaError.self) { try UserTokenVerificationKey(jwk: #"{"kty":"RSA","kid":"k","n":"AQAB","e":"AQAB"}"#) }
    }
}

/// Buckia's tokens in PyJWT, the Python JWT library, and PyJWT's tokens in Buckia.
@Suite("User tokens in PyJWT")
struct PyJWTTests {
    static let script = #"""
import json, sys, jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
import base64
request = json.load(sys.stdin)
def b64(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
out = {}
if request["alg"] == "EdDSA":
    key = jwt.PyJWK(json.loads(request["jwk"])).key
    private = Ed25519PrivateKey.from_private_bytes(b64(request["private"]))
else:
    key = private = b64(request["private"])
claims = jwt.decode(request["token"], key, algorithms=[request["alg"]], audience="buckia", leeway=0,
                    options={"require": ["exp", "iat", "nbf", "sub", "jti"]})
out["claims"] = dict(claims)
out["kid"] = jwt.get_unverified_header(request["token"])["kid"]
try:
    t = request["token"]
    i = len(t) - 10
    jwt.decode(t[:i] + ("A" if t[i] != "A" else "B") + t[i + 1:], key, algorithms=[request["alg"]], audience="buckia")
    out["tampered"] = "accepted"
except jwt.InvalidTokenError as e:
    out["tampered"] = type(e).__name__
claims["sub"] = "from-python"
out["python_token"] = jwt.encode(claims, private, algorithm=request["alg"], headers={"kid": request["kid"]})
print(json.dumps(out))
"""#

    @Test("Buckia's tokens verify in PyJWT, and PyJWT's verify in Buckia", arguments: UserTokenAlgorithm.allCases)
    func interop(_ algorithm: UserTokenAlgorithm) throws {
        let key = try UserTokenSigningKey.generate(algorithm, keyId: "interop-1")
        let issued = try UserTokenIssuer(key: key).issue(userId: "u1", grants: seedGrants, lifetime: .seconds(3600))
        let request: [String: String] = [
            "alg": algorithm.rawValue, "kid": key.keyId, "token": issued.token.exposedValue, "private": key.encoded.exposedValue,
            "jwk": try key.verificationKey().jwk ?? "",
        ]
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-pyjwt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let scriptFile = folder.appendingPathComponent("check.py")
        try Data(Self.script.utf8).write(to: scriptFile)
        let input = folder.appendingPathComponent("request.json")
        try JSONEncoder().encode(request).write(to: input)
        let run = try ToolRun.run("sh", ["-c", "python3 \"$0\" < \"$1\"", scriptFile.path, input.path], limit: .seconds(60))
        try #require(run.status == 0, "PyJWT failed: \(run.errors)")
        let output = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        let claims = try #require(output["claims"] as? [String: Any])
        #expect(claims["sub"] as? String == "u1")
        #expect(claims["aud"] as? String == "buckia")
        #expect((claims["grants"] as? [[String: Any]])?.first?["prefix"] as? String == "u1/")
        // The deliver permission is a plain name in the token: what PyJWT decodes.
        #expect((claims["grants"] as? [[String: Any]])?.last?["allow"] as? [String] == ["deliver"])
        #expect(output["kid"] as? String == "interop-1")
        #expect(output["tampered"] as? String == "InvalidSignatureError")
        let fromPython = try #require(output["python_token"] as? String)
        let verifier = try UserTokenVerifier(keys: [try key.verificationKey()])
        let back = try verifier.verify(fromPython)
        #expect(back.subject == "from-python")
        #expect(back.grants == seedGrants)
    }
}
