import BuckiaCore
import BuckiaHTTP
import BuckiaSecurity
import BuckiaTestSupport
import Foundation
import Testing

@testable import BuckiaOAuth

/// ID tokens from the OAuth emulator (RS256, signed by PyJWT) checked as STS checks them: the
/// issuer's published key, its algorithm only, issuer, audience and times; every forgery a typed
/// refusal with its reason.
@Suite("Web identity: ID tokens checked against the issuer's published keys")
struct WebIdentityTests {
    static func verifier(_ emulator: OAuthEmulator, keys: (any WebIdentityKeySource)? = nil, clock: @escaping @Sendable () -> Date = { Date() }) async throws
        -> WebIdentityVerifier
    {
        let source: any WebIdentityKeySource
        if let keys { source = keys } else { source = try await IssuerKeys.discover(issuer: emulator.issuer) }
        return try WebIdentityVerifier(issuer: emulator.issuer.absoluteString, audiences: [emulator.clientId], keys: source, clock: clock)
    }

    @Test("an ID token from the emulator verifies, through the keys its discovery document names")
    func valid() async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let verifier = try await Self.verifier(emulator)
        let token = try await emulator.idToken(sub: "00u1abcd")
        let claims = try await verifier.verify(token)
        #expect(claims.subject == "00u1abcd")
        #expect(claims.issuer == emulator.issuer.absoluteString)
        #expect(claims.audience == [emulator.clientId])
        #expect(claims.expiresAt > Date())
    }

    /// A forged or unusable token, and the reason it must be refused with.
    struct Forgery: Sendable, CustomTestStringConvertible {
        let name: String
        let claims: [String: String]
        var numbers: [String: Int] = [:]
        let reason: UserTokenRefusal.Reason
        var testDescription: String { "\(name) → \(reason.rawValue)" }
    }

    static let now = Int(Date().timeIntervalSince1970)

    static let forgeries: [Forgery] = [
        Forgery(name: "alg none", claims: ["alg": "none"], reason: .malformed),
        Forgery(name: "HS256 keyed with the issuer's public key", claims: ["alg": "HS256"], reason: .algorithm),
        Forgery(name: "signed by a key the issuer does not publish, under its key id", claims: ["key": "new"], reason: .signature),
        Forgery(name: "a key id the issuer does not publish", claims: ["kid": "not-a-key"], reason: .unknownKey),
        Forgery(name: "another issuer", claims: ["iss": "http://127.0.0.1:1"], reason: .issuer),
        Forgery(name: "the issuer with a trailing slash", claims: ["iss": "ISSUER/"], reason: .issuer),
        Forgery(name: "another audience", claims: ["aud": "another-app"], reason: .audience),
        Forgery(name: "an empty subject", claims: ["sub": ""], reason: .malformed),
        Forgery(name: "expired an hour ago", claims: [:], numbers: ["exp": now - 3600, "iat": now - 7200], reason: .expired),
        Forgery(name: "not valid for an hour", claims: [:], numbers: ["nbf": now + 3600], reason: .notYetValid),
        Forgery(name: "issued in an hour", claims: [:], numbers: ["iat": now + 3600, "exp": now + 7200], reason: .notYetValid),
        Forgery(name: "exp as text", claims: ["exp": "tomorrow"], reason: .malformed),
        Forgery(name: "exp past year 9999", claims: [:], numbers: ["exp": 300_000_000_000], reason: .malformed),
    ]

    @Test("a forged or unusable token is refused with its reason", arguments: forgeries)
    func forged(_ forgery: Forgery) async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let verifier = try await Self.verifier(emulator)
        var claims: [String: any Sendable] = forgery.claims.mapValues { $0.replacingOccurrences(of: "ISSUER", with: emulator.issuer.absoluteString) }
        for (name, value) in forgery.numbers { claims[name] = value }
        let sub = forgery.claims["sub"] ?? "u1"
        claims.removeValue(forKey: "sub")
        let token = try await emulator.idToken(sub: sub, claims)
        let refusal = await #expect(throws: UserTokenRefusal.self) { _ = try await verifier.verify(token) }
        #expect(refusal?.reason == forgery.reason, "\(refusal.map { "\($0)" } ?? "accepted")")
    }

    @Test("a token altered after signing is refused: payload swapped, signature bit flipped, parts dropped or added, too long")
    func altered() async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let verifier = try await Self.verifier(emulator)
        let mine = try await emulator.idToken(sub: "u1").split(separator: ".").map(String.init)
        let theirs = try await emulator.idToken(sub: "u2").split(separator: ".").map(String.init)
        try #require(mine.count == 3 && theirs.count == 3)
        var flipped = Array(mine[2])
        flipped[10] = flipped[10] == "A" ? "B" : "A"
        let cases: [(String, String, UserTokenRefusal.Reason)] = [
            ("u2's payload under u1's signature", [mine[0], theirs[1], mine[2]].joined(separator: "."), .signature),
            ("a signature character changed", [mine[0], mine[1], String(flipped)].joined(separator: "."), .signature),
            ("no signature", [mine[0], mine[1], ""].joined(separator: "."), .malformed),
            ("two parts", [mine[0], mine[1]].joined(separator: "."), .malformed),
            ("four parts", (mine + [mine[2]]).joined(separator: "."), .malformed),
            ("padded base64", [mine[0], mine[1], mine[2] + "=="].joined(separator: "."), .malformed),
            ("over 64 KiB", [mine[0], mine[1], mine[2] + String(repeating: "A", count: 70_000)].joined(separator: "."), .malformed),
        ]
        for (name, token, reason) in cases {
            let refusal = await #expect(throws: UserTokenRefusal.self, "\(name)") { _ = try await verifier.verify(token) }
            #expect(refusal?.reason == reason, "\(name): \(refusal.map { "\($0)" } ?? "accepted")")
        }
        // The untouched token still passes: the cases fail for what was done to them.
        #expect(try await verifier.verify(mine.joined(separator: ".")).subject == "u1")
    }

    @Test("a rotated key is fetched when a token names it; made-up key ids cost one fetch a minute")
    func rotation() async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let time = ManualTime()
        let keys = try IssuerKeys(url: emulator.issuer.appendingPathComponent("jwks"), clock: time.clock)
        let verifier = try await Self.verifier(emulator, keys: keys)
        let old = try await emulator.idToken(sub: "u1")
        #expect(try await verifier.verify(old).subject == "u1")
        try await emulator.control("rotate-key", ["keep_old": true])
        let new = try await emulator.idToken(sub: "u1")
        #expect(try await verifier.verify(new).subject == "u1", "a token signed with the new key")
        #expect(try await verifier.verify(old).subject == "u1", "a token signed with the old key, still published")
        #expect(await keys.fetches == 2)
        // Tokens naming key ids nobody publishes: the first asks once, the rest within the
        // minute use the set in hand.
        for index in 0..<20 {
            let token = try await emulator.idToken(sub: "u1", ["kid": "made-up-\(index)"])
            await #expect(throws: UserTokenRefusal.self) { _ = try await verifier.verify(token) }
        }
        #expect(await keys.fetches == 2, "made-up key ids fetched the set again within the minute")
        time.advance(61)
        let token = try await emulator.idToken(sub: "u1", ["kid": "made-up-again"])
        await #expect(throws: UserTokenRefusal.self) { _ = try await verifier.verify(token) }
        #expect(await keys.fetches == 3)
        #expect(try await emulator.jwksFetches() == 3, "the emulator counted another number of fetches")
        // The old key withdrawn: once the set is fetched again, its tokens are refused.
        try await emulator.control("rotate-key", ["keep_old": false])
        time.advance(3601)
        let withdrawn = await #expect(throws: UserTokenRefusal.self) { _ = try await verifier.verify(old) }
        #expect(withdrawn?.reason == .unknownKey)
    }

    @Test("the last good key set is kept when the issuer cannot be reached")
    func issuerGone() async throws {
        let emulator = try await OAuthEmulator.start()
        let time = ManualTime()
        let keys = try IssuerKeys(url: emulator.issuer.appendingPathComponent("jwks"), http: HTTPClient(configuration: .init(retryPolicy: .none)), clock: time.clock)
        let verifier = try await Self.verifier(emulator, keys: keys)
        let token = try await emulator.idToken(sub: "u1")
        _ = try await verifier.verify(token)
        emulator.stop()
        time.advance(3601)
        #expect(try await verifier.verify(token).subject == "u1")
        #expect(await keys.fetches == 2, "the stale set was not fetched again")
        let fresh = try IssuerKeys(url: emulator.issuer.appendingPathComponent("jwks"), http: HTTPClient(configuration: .init(retryPolicy: .none)))
        await #expect(throws: BuckiaError.self) { _ = try await fresh.keySet(refresh: false) }
    }

    @Test("a discovery document naming another issuer is refused")
    func discoveryIssuer() async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let other = try #require(URL(string: emulator.issuer.absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost")))
        let error = await #expect(throws: BuckiaError.self) { _ = try await IssuerKeys.discover(issuer: other) }
        #expect(error?.code == .corrupt && error?.message.contains("names another issuer") == true)
        await #expect(throws: BuckiaError.self) { _ = try await IssuerKeys.discover(issuer: try #require(URL(string: "http://example.com/issuer"))) }
    }
}

/// Key sets as issuers publish them, and as an attacker could.
@Suite("Web identity: JSON Web Key Sets")
struct JSONWebKeySetTests {
    static let rsa = #"{"kty":"RSA","kid":"r1","use":"sig","alg":"RS256","n":"\#(RSAKeyText.n)","e":"AQAB"}"#
    static let ed = #"{"kty":"OKP","crv":"Ed25519","kid":"e1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#

    @Test("usable keys are read; other kinds are set aside with why")
    func mixed() throws {
        let ec = #"{"kty":"EC","crv":"P-256","kid":"ec1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#
        let encryption = #"{"kty":"RSA","kid":"enc1","use":"enc","n":"\#(RSAKeyText.n)","e":"AQAB"}"#
        let ps256 = #"{"kty":"RSA","kid":"ps1","alg":"PS256","n":"\#(RSAKeyText.n)","e":"AQAB"}"#
        let set = try JSONWebKeySet(json: Data(#"{"keys":[\#(Self.rsa),\#(Self.ed),\#(ec),\#(encryption),\#(ps256)]}"#.utf8))
        #expect(Set(set.keys.keys) == ["r1", "e1"])
        #expect(set.keys["r1"]?.algorithm == "RS256" && set.keys["e1"]?.algorithm == "EdDSA")
        #expect(set.skipped.count == 3)
    }

    @Test("a set that is not one, or holds a damaged or private key, is refused whole", arguments: [
        #"not json"#, #"[]"#, #"{"keys":{}}"#, #"{"keys":[1]}"#, #"{"keys":[]}"#,
        #"{"keys":[{"kty":"EC","kid":"x","crv":"P-256"}]}"#,
        #"{"keys":[\#(JSONWebKeySetTests.rsa),\#(JSONWebKeySetTests.rsa)]}"#,
        #"{"keys":[{"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"}]}"#,
        #"{"keys":[{"kty":"RSA","kid":"r","n":"\#(RSAKeyText.n)","e":"AQAB","d":"AQAB"}]}"#,
        #"{"keys":[{"kty":"RSA","kid":"r","n":"\#(RSAKeyText.n)"}]}"#,
        #"{"keys":[{"kty":"RSA","kid":"r","n":"\#(RSAKeyText.n)","e":"AAAA"}]}"#,
        #"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"e","x":"AQAB"}]}"#,
        #"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"e","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"AQAB"}]}"#,
        #"{"keys":[],"keys":[\#(JSONWebKeySetTests.rsa)]}"#,
    ])
    func refused(_ text: String) {
        #expect(throws: BuckiaError.self) { try JSONWebKeySet(json: Data(text.utf8)) }
    }

    @Test("a set over 256 KiB is refused before it is parsed")
    func tooLarge() {
        let padding = String(repeating: " ", count: JSONWebKeySet.maximumBytes)
        #expect(throws: BuckiaError.self) { try JSONWebKeySet(json: Data(#"{"keys":[\#(Self.rsa)]}\#(padding)"#.utf8)) }
    }
}

/// A 2048-bit RSA modulus as base64url (RFC 7517 appendix A.1's example key).
enum RSAKeyText {
    static let n =
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
}
