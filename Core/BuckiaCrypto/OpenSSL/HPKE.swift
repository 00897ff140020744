#if !canImport(CryptoKit)
import Foundation

/// Hybrid public key encryption (RFC 9180), CryptoKit's `HPKE` in the subset Buckia uses: base
/// mode with DHKEM(X25519, HKDF-SHA256), HKDF-SHA256 and AES-256-GCM, what a diff sealed to its
/// recipient is encrypted with. The same names and shapes as CryptoKit's, so the call sites
/// compile against both; checked against the CFRG's published test vectors.
public enum HPKE {
    /// The key encapsulation mechanisms: DHKEM(X25519, HKDF-SHA256) alone here.
    public enum KEM: Sendable, Hashable {
        case Curve25519_HKDF_SHA256

        var identifier: [UInt8] { [0x00, 0x20] }
    }

    /// The key derivation functions: HKDF-SHA256 alone here.
    public enum KDF: Sendable, Hashable {
        case HKDF_SHA256

        var identifier: [UInt8] { [0x00, 0x01] }
    }

    /// The authenticated encryption algorithms: AES-256-GCM alone here.
    public enum AEAD: Sendable, Hashable {
        case AES_GCM_256

        var identifier: [UInt8] { [0x00, 0x02] }
        static let keyByteCount = 32
        static let nonceByteCount = 12
        static let tagByteCount = 16
    }

    /// A KEM, KDF and AEAD together.
    public struct Ciphersuite: Sendable, Hashable {
        public let kem: HPKE.KEM
        public let kdf: HPKE.KDF
        public let aead: HPKE.AEAD

        public init(kem: HPKE.KEM, kdf: HPKE.KDF, aead: HPKE.AEAD) {
            self.kem = kem
            self.kdf = kdf
            self.aead = aead
        }

        /// `"HPKE" || kem_id || kdf_id || aead_id`.
        var identifier: [UInt8] { Array("HPKE".utf8) + kem.identifier + kdf.identifier + aead.identifier }
    }

    /// What HPKE refuses.
    public enum Errors: Error, Sendable {
        case inconsistentParameters
        case inconsistentCiphersuiteAndKey
        case outOfRangeSequenceNumber
        case ciphertextTooShort
    }

    /// Encrypts messages to one recipient's public key: ``encapsulatedKey`` goes with them.
    public struct Sender: Sendable {
        /// The encapsulated key (the ephemeral public key) the recipient opens the messages with.
        public let encapsulatedKey: Data
        private var context: Context

        /// A sender in base mode to `recipientKey`.
        public init(recipientKey: Curve25519.KeyAgreement.PublicKey, ciphersuite: Ciphersuite, info: Data) throws {
            var generator = SystemRandomNumberGenerator()
            var seed = [UInt8]()
            while seed.count < Curve25519.KeyAgreement.keyByteCount {
                Swift.withUnsafeBytes(of: generator.next() as UInt64) { seed.append(contentsOf: $0) }
            }
            try self.init(recipientKey: recipientKey, ciphersuite: ciphersuite, info: info, ephemeralKey: try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: seed))
        }

        /// A sender with a given ephemeral key: for known-answer tests only (an ephemeral key
        /// used twice gives away the messages of both).
        init(recipientKey: Curve25519.KeyAgreement.PublicKey, ciphersuite: Ciphersuite, info: Data, ephemeralKey: Curve25519.KeyAgreement.PrivateKey) throws {
            let enc = Array(ephemeralKey.publicKey.rawRepresentation)
            let dh = try ephemeralKey.sharedSecretFromKeyAgreement(with: recipientKey).bytes
            let secret = DHKEM.sharedSecret(dh: dh, kemContext: enc + Array(recipientKey.rawRepresentation))
            encapsulatedKey = Data(enc)
            context = Context(ciphersuite: ciphersuite, sharedSecret: secret, info: Array(info))
        }

        /// Encrypts `msg`, authenticating `aad` with it; each message gets the next nonce.
        public mutating func seal<M: DataProtocol, AD: DataProtocol>(_ msg: M, authenticating aad: AD) throws -> Data {
            try context.seal(Array(msg), aad: Array(aad))
        }

        /// Encrypts `msg`.
        public mutating func seal<M: DataProtocol>(_ msg: M) throws -> Data { try seal(msg, authenticating: Data()) }
    }

    /// Decrypts what a ``Sender`` encrypted to this recipient's key, in the order it was sealed.
    public struct Recipient: Sendable {
        private var context: Context

        /// A recipient in base mode of what was sealed with `encapsulatedKey`.
        ///
        /// - Throws: ``HPKE/Errors/inconsistentParameters`` for an encapsulated key that is not
        ///   32 bytes; what the key agreement throws for one that is not a usable X25519 key.
        public init(privateKey: Curve25519.KeyAgreement.PrivateKey, ciphersuite: Ciphersuite, info: Data, encapsulatedKey: Data) throws {
            guard encapsulatedKey.count == Curve25519.KeyAgreement.keyByteCount else { throw Errors.inconsistentParameters }
            let dh = try privateKey.sharedSecretFromKeyAgreement(with: try Curve25519.KeyAgreement.PublicKey(rawRepresentation: encapsulatedKey)).bytes
            let secret = DHKEM.sharedSecret(dh: dh, kemContext: Array(encapsulatedKey) + Array(privateKey.publicKey.rawRepresentation))
            context = Context(ciphersuite: ciphersuite, sharedSecret: secret, info: Array(info))
        }

        /// Decrypts `ciphertext`, checking it and `aad`.
        ///
        /// - Throws: ``CryptoKitError/authenticationFailure`` for a message that was changed,
        ///   sealed for another recipient or out of order; ``HPKE/Errors/ciphertextTooShort``.
        public mutating func open<C: DataProtocol, AD: DataProtocol>(_ ciphertext: C, authenticating aad: AD) throws -> Data {
            try context.open(Array(ciphertext), aad: Array(aad))
        }

        /// Decrypts `ciphertext`.
        public mutating func open<C: DataProtocol>(_ ciphertext: C) throws -> Data { try open(ciphertext, authenticating: Data()) }
    }

    /// DHKEM(X25519, HKDF-SHA256)'s ExtractAndExpand (RFC 9180 §4.1).
    enum DHKEM {
        static let suite = Array("KEM".utf8) + [0x00, 0x20]

        static func sharedSecret(dh: [UInt8], kemContext: [UInt8]) -> [UInt8] {
            let prk = LabeledHKDF.extract(salt: [], label: "eae_prk", ikm: dh, suite: suite)
            return LabeledHKDF.expand(prk: prk, label: "shared_secret", info: kemContext, length: 32, suite: suite)
        }
    }

    /// The key schedule's result and the message counter (RFC 9180 §5.1, §5.2), base mode.
    struct Context: Sendable {
        private let key: SymmetricKey
        private let baseNonce: [UInt8]
        private var sequence: UInt64 = 0

        init(ciphersuite: Ciphersuite, sharedSecret: [UInt8], info: [UInt8]) {
            let suite = ciphersuite.identifier
            let pskIdHash = LabeledHKDF.extract(salt: [], label: "psk_id_hash", ikm: [], suite: suite)
            let infoHash = LabeledHKDF.extract(salt: [], label: "info_hash", ikm: info, suite: suite)
            let keyScheduleContext = [0x00] + pskIdHash + infoHash
            let secret = LabeledHKDF.extract(salt: sharedSecret, label: "secret", ikm: [], suite: suite)
            key = SymmetricKey(data: LabeledHKDF.expand(prk: secret, label: "key", info: keyScheduleContext, length: AEAD.keyByteCount, suite: suite))
            baseNonce = LabeledHKDF.expand(prk: secret, label: "base_nonce", info: keyScheduleContext, length: AEAD.nonceByteCount, suite: suite)
        }

        /// The base nonce XOR the sequence number, which then moves on; refused once it would wrap.
        private mutating func nextNonce() throws -> AES.GCM.Nonce {
            guard sequence < UInt64.max else { throw Errors.outOfRangeSequenceNumber }
            var nonce = baseNonce
            withUnsafeBytes(of: sequence.bigEndian) { counter in
                for (index, byte) in counter.enumerated() { nonce[nonce.count - 8 + index] ^= byte }
            }
            return try AES.GCM.Nonce(data: nonce)
        }

        mutating func seal(_ message: [UInt8], aad: [UInt8]) throws -> Data {
            let box = try AES.GCM.seal(message, using: key, nonce: try nextNonce(), authenticating: aad)
            sequence += 1
            return box.ciphertext + box.tag
        }

        mutating func open(_ ciphertext: [UInt8], aad: [UInt8]) throws -> Data {
            guard ciphertext.count >= AEAD.tagByteCount else { throw Errors.ciphertextTooShort }
            let split = ciphertext.count - AEAD.tagByteCount
            let box = try AES.GCM.SealedBox(nonce: try nextNonce(), ciphertext: ciphertext[..<split], tag: ciphertext[split...])
            let plaintext = try AES.GCM.open(box, using: key, authenticating: aad)
            sequence += 1
            return plaintext
        }
    }

    /// LabeledExtract and LabeledExpand (RFC 9180 §4) over HKDF-SHA256 (RFC 5869).
    enum LabeledHKDF {
        static let version = Array("HPKE-v1".utf8)

        static func extract(salt: [UInt8], label: String, ikm: [UInt8], suite: [UInt8]) -> [UInt8] {
            // HKDF-Extract: HMAC with the salt as key (an empty salt is HashLen zeros, which
            // HMAC's zero padding makes the same key).
            hmac(key: salt, message: version + suite + Array(label.utf8) + ikm)
        }

        static func expand(prk: [UInt8], label: String, info: [UInt8], length: Int, suite: [UInt8]) -> [UInt8] {
            let labeledInfo = [UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)] + version + suite + Array(label.utf8) + info
            // HKDF-Expand: T(n) = HMAC(PRK, T(n-1) || info || n), concatenated to `length`.
            var output: [UInt8] = []
            var previous: [UInt8] = []
            var counter: UInt8 = 1
            while output.count < length {
                previous = hmac(key: prk, message: previous + labeledInfo + [counter])
                output += previous
                counter &+= 1
            }
            return Array(output.prefix(length))
        }

        static func hmac(key: [UInt8], message: [UInt8]) -> [UInt8] {
            HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)).withUnsafeBytes { Array($0) }
        }
    }
}
#endif
