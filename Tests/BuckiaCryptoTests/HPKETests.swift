import BuckiaCrypto
import Foundation
import Testing

// CryptoKit's API only, as CryptoKitSubsetTests: checked here against libcrypto, and by
// Tools/check/cryptokit-check against swift-crypto.

@Suite("X25519 and HPKE (RFC 7748, RFC 9180)")
struct HPKETests {
    static let suite = HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_256)

    @Test("X25519: RFC 7748 §6.1's two keys agree on its shared secret")
    func x25519() throws {
        let alice = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: try unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let bob = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: try unhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
        #expect(hex(alice.publicKey.rawRepresentation) == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        #expect(hex(bob.publicKey.rawRepresentation) == "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let shared = try alice.sharedSecretFromKeyAgreement(with: bob.publicKey).withUnsafeBytes { Array($0) }
        #expect(hex(shared) == "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
        #expect(try bob.sharedSecretFromKeyAgreement(with: alice.publicKey).withUnsafeBytes { Array($0) } == shared)
        #expect(throws: (any Error).self) { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: 31)) }
        // A peer key of small order (zero) gives the all-zero secret, which libcrypto here
        // refuses and CryptoKit and swift-crypto return (they chose not to check, for
        // conformance with each other): either way no secret only Alice could compute.
        let zero = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        do {
            let weak = try alice.sharedSecretFromKeyAgreement(with: zero).withUnsafeBytes { Array($0) }
            #expect(weak == [UInt8](repeating: 0, count: 32))
        } catch {
            // Refused: libcrypto's answer.
        }
    }

    @Test("RFC 9180's vector: the recipient opens all 257 encryptions in order, across the nonce counter's first byte")
    func vector() throws {
        let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: try unhex(HPKEVector.skRm))
        #expect(hex(key.publicKey.rawRepresentation) == HPKEVector.pkRm)
        var recipient = try HPKE.Recipient(
            privateKey: key, ciphersuite: Self.suite, info: Data(try unhex(HPKEVector.info)), encapsulatedKey: Data(try unhex(HPKEVector.enc)))
        #expect(HPKEVector.ciphertexts.count == 257)
        for (number, ciphertext) in HPKEVector.ciphertexts.enumerated() {
            let plaintext = try recipient.open(try unhex(ciphertext), authenticating: Data("Count-\(number)".utf8))
            #expect(hex(plaintext) == HPKEVector.plaintext, "encryption \(number)")
        }
    }

    @Test("RFC 9180's vector: out of order, with other info, other associated data or one byte changed, nothing opens")
    func vectorRefusals() throws {
        let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: try unhex(HPKEVector.skRm))
        let info = Data(try unhex(HPKEVector.info)), enc = Data(try unhex(HPKEVector.enc))
        func fresh(info: Data = info) throws -> HPKE.Recipient {
            try HPKE.Recipient(privateKey: key, ciphersuite: Self.suite, info: info, encapsulatedKey: enc)
        }
        var outOfOrder = try fresh()
        #expect(throws: (any Error).self) { try outOfOrder.open(try unhex(HPKEVector.ciphertexts[1]), authenticating: Data("Count-1".utf8)) }
        var otherInfo = try fresh(info: Data("another info".utf8))
        #expect(throws: (any Error).self) { try otherInfo.open(try unhex(HPKEVector.ciphertexts[0]), authenticating: Data("Count-0".utf8)) }
        var otherAAD = try fresh()
        #expect(throws: (any Error).self) { try otherAAD.open(try unhex(HPKEVector.ciphertexts[0]), authenticating: Data("Count-1".utf8)) }
        var changed = try fresh()
        var bytes = try unhex(HPKEVector.ciphertexts[0])
        bytes[3] ^= 0x01
        #expect(throws: (any Error).self) { try changed.open(bytes, authenticating: Data("Count-0".utf8)) }
        var short = try fresh()
        #expect(throws: (any Error).self) { try short.open([UInt8](repeating: 0, count: 15), authenticating: Data()) }
        #expect(throws: (any Error).self) { try HPKE.Recipient(privateKey: key, ciphersuite: Self.suite, info: info, encapsulatedKey: enc.dropLast()) }
    }

    @Test("A sender's messages open for its recipient, in order, and for no other key")
    func roundTrip() throws {
        let recipientKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: try unhex(String(repeating: "42", count: 32)))
        let otherKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: try unhex(String(repeating: "43", count: 32)))
        let info = Data("buckia diff".utf8)
        var sender = try HPKE.Sender(recipientKey: recipientKey.publicKey, ciphersuite: Self.suite, info: info)
        #expect(sender.encapsulatedKey.count == 32)
        let messages = [Data("first".utf8), Data(), Data(repeating: 7, count: 100_000)]
        let sealed = try messages.map { try sender.seal($0, authenticating: Data("aad".utf8)) }
        #expect(zip(sealed, messages).allSatisfy { $0.count == $1.count + 16 })
        var recipient = try HPKE.Recipient(privateKey: recipientKey, ciphersuite: Self.suite, info: info, encapsulatedKey: sender.encapsulatedKey)
        #expect(try sealed.map { try recipient.open($0, authenticating: Data("aad".utf8)) } == messages)
        var stranger = try HPKE.Recipient(privateKey: otherKey, ciphersuite: Self.suite, info: info, encapsulatedKey: sender.encapsulatedKey)
        #expect(throws: (any Error).self) { try stranger.open(sealed[0], authenticating: Data("aad".utf8)) }
        // Two senders to one key never share an encapsulated key (a fresh ephemeral key each).
        let again = try HPKE.Sender(recipientKey: recipientKey.publicKey, ciphersuite: Self.suite, info: info)
        #expect(again.encapsulatedKey != sender.encapsulatedKey)
    }
}
