@testable import BuckiaSecurity
import BuckiaCore
import Foundation
import Testing

/// What the libcrypto build before the CryptoKit facade (commit 543e23b) wrote, read by today's:
/// a secret store sealed under a passphrase (scrypt, AES-256-GCM) and one under a raw key, each
/// holding a token signing key, and a token each key signed. Written with that build's
/// `buckia token keygen` and `buckia token issue`; the JWK is what keygen printed.
struct FacadeCompatibilityTests {
    static let passphraseStore = #"{"encryption":{"cipher":"AES-256-GCM","kdf":"scrypt","n":32768,"p":1,"r":8,"salt":"0UtOKcKyJ9YuJvzWbY4b5Q=="},"format":"buckia-secrets","sealed":"mMChSIGuy8TL8L7JaiYYoakbvFwJ45OeCFwG2MoUv0rzTVUmQpwoAo6Hze7Ko5SmMPjHuKF6KPf9oZzgwU+tO/31itmMT8448vdacsDc2NgbvXgyKBkwWtpr9mNJnhhZRuOT5l85APJidg30J6ZB6aWckZzjXGtFcQo6QeUg5N4eK3h1y/jUVEMM4NRc1Mdj3A+5+gpFEY87E5dzWWf5ik0XEjjuNrrwdZQm5nWPZ5dfDYVp","version":1}"#
    static let keyStore = #"{"encryption":{"cipher":"AES-256-GCM","kdf":"none"},"format":"buckia-secrets","sealed":"pUthOBkJCWXo2vSu/3NNxMB82CWjVzt3H7EXHYY2kWAlcNXdOLt5rmzmdEjsqqGBKKPfvI8nqL4AYhIw8BUQx60Bq9knzPzXRzcR+x6Whes4KcfSGeJ6pNHLRNd3yciJBAz86pAx68Gy9uw27GdHDYsZjCwkRjFsfIQHB58ZxvDSyOySxVyZ9jkfbZS+uqgcPSgFcus9w0BpvWlytui3ydUXUc3PyKv877OhwM59rW4a2w==","version":1}"#
    static let passphrase = "correct horse battery staple"
    static let storeKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    static let publicX = "J06VcnSNMkbo5aqOh7Npl0GPxY2cjhHCjYS5RcAn0PM"
    static let edDSAToken = "eyJhbGciOiJFZERTQSIsImtpZCI6ImdvbGRlbi1lZGRzYSIsInR5cCI6IkpXVCJ9.eyJhdWQiOiJidWNraWEiLCJleHAiOjE3OTY1OTMwODgsImdyYW50cyI6W3siYWxsb3ciOlsicmVhZCJdLCJwcmVmaXgiOiJwaG90b3MvIn1dLCJpYXQiOjE3OTY1MDY2ODgsImp0aSI6IjNONFdDNVZTbHJMOGY2NGthcTdnSzd1ZllFcyIsIm5iZiI6MTc5NjUwNjY4OCwic3ViIjoiYWxpY2UifQ.Wzxp5ILbUYeDoinJRJbxfDHI5KjrLTX9k8IHrJC_t2h9WEwBXWANKYL0zqf4-548BovsyZNV2GW3EaO9Q1LIAQ"
    static let hs256Token = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImdvbGRlbi1ocyIsInR5cCI6IkpXVCJ9.eyJhdWQiOiJidWNraWEiLCJleHAiOjE3OTY1OTMwODgsImdyYW50cyI6W3siYWxsb3ciOlsicmVhZCIsIndyaXRlIl0sInByZWZpeCI6ImluYm94LyJ9XSwiaWF0IjoxNzk2NTA2Njg4LCJqdGkiOiIzTjRXQzAxMXJrSlpudnB6YVlqM3kxRVRSUFoiLCJuYmYiOjE3OTY1MDY2ODgsInN1YiI6ImJvYiJ9.YSwUaEoeRQoO5TD-sHVCUzfJTKvya0hSah2zg2rAwpc"

    static func store(_ json: String, _ encryption: FileSecretStore.Encryption, in folder: URL) throws -> TokenManager {
        let secrets = folder.appendingPathComponent("s")
        try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let file = secrets.appendingPathComponent("secrets.json")
        try Data(json.utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        return TokenManager(store: FileSecretStore(folder: secrets, encryption: encryption))
    }

    /// The token's issue time, so a verifier can be set to a moment the token was valid.
    static func issuedAt(_ token: String) throws -> Date {
        let payload = try #require(Base64URL.decode(String(token.split(separator: ".")[1])))
        let object = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        return Date(timeIntervalSince1970: try #require(object["iat"] as? Double))
    }

    @Test("A passphrase-sealed store from the libcrypto build opens, its Ed25519 key has the same public key, and re-signs its token byte for byte")
    func edDSA() throws {
        let scratch = try ScratchFolder()
        let tokens = try Self.store(Self.passphraseStore, .passphrase(Secret(Self.passphrase)), in: scratch.url)
        let key = try #require(try tokens.signingKey(keyId: "golden-eddsa"))
        let jwk = try #require(try key.verificationKey().jwk)
        #expect(jwk.contains(#""x":"\#(Self.publicX)""#))
        let parts = Self.edDSAToken.split(separator: ".")
        let signature = try key.sign(Array("\(parts[0]).\(parts[1])".utf8))
        #if canImport(CryptoKit)
        // CryptoKit adds randomness to Ed25519 signatures (Docs/Platforms.md): other bytes, same key.
        #expect(Base64URL.encode(Data(signature)) != String(parts[2]))
        #else
        // Ed25519 over libcrypto is deterministic: the same key signs the same input the same way.
        #expect(Base64URL.encode(Data(signature)) == String(parts[2]))
        #endif
        let issued = try Self.issuedAt(Self.edDSAToken)
        let verifier = try UserTokenVerifier(keys: [key.verificationKey()], clock: { issued })
        #expect(try verifier.verify(Self.edDSAToken).subject == "alice")
        #expect(try verifier.verify("\(parts[0]).\(parts[1]).\(Base64URL.encode(Data(signature)))").subject == "alice")
    }

    @Test("A key-sealed store from the libcrypto build opens, and its HS256 key re-signs its token byte for byte")
    func hs256() throws {
        let scratch = try ScratchFolder()
        let tokens = try Self.store(Self.keyStore, .key(Secret(Self.storeKey)), in: scratch.url)
        let signing = try #require(try tokens.signingKey(keyId: "golden-hs"))
        let parts = Self.hs256Token.split(separator: ".")
        #expect(Base64URL.encode(Data(try signing.sign(Array("\(parts[0]).\(parts[1])".utf8)))) == String(parts[2]))
        let issued = try Self.issuedAt(Self.hs256Token)
        let verifier = try UserTokenVerifier(keys: [signing.verificationKey()], clock: { issued })
        #expect(try verifier.verify(Self.hs256Token).subject == "bob")
    }

    @Test("The wrong passphrase still fails as before: the tag check, not a garbled store")
    func wrongPassphrase() throws {
        let scratch = try ScratchFolder()
        let tokens = try Self.store(Self.passphraseStore, .passphrase(Secret("wrong")), in: scratch.url)
        #expect(throws: BuckiaError.self) { try tokens.signingKey(keyId: "golden-eddsa") }
    }
}
