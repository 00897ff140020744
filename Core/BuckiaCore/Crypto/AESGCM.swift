internal import BuckiaCrypto
import Foundation

/// AES-256 in Galois/Counter Mode: encryption that also detects tampering, through CryptoKit's
/// `AES.GCM`.
///
/// Used by the encryption transform of engines and chunk stores. A sealed box's
/// ``SealedBox/combined`` form is `nonce (12) ‖ ciphertext ‖ tag (16)`.
package enum AESGCM {
    /// The key length in bytes (AES-256).
    package static let keyByteCount = 32
    /// The nonce length in bytes; a random nonce of this size is safe for 2³² messages per key.
    package static let nonceByteCount = 12
    /// The authentication tag length in bytes.
    package static let tagByteCount = 16

    /// The output of encryption.
    package struct SealedBox: Hashable, Sendable {
        package var nonce: [UInt8]
        package var ciphertext: [UInt8]
        package var tag: [UInt8]

        /// `nonce ‖ ciphertext ‖ tag`, the form to store.
        package var combined: Data { Data(nonce + ciphertext + tag) }

        /// Splits a combined box.
        ///
        /// - Throws: ``BuckiaError/Code/corrupt`` if it is too short to hold a nonce and tag.
        package init(combined: Data) throws {
            let bytes = [UInt8](combined)
            guard bytes.count >= AESGCM.nonceByteCount + AESGCM.tagByteCount else {
                throw BuckiaError(.corrupt, "The encrypted data is \(bytes.count) bytes, too short to hold a nonce and a tag.")
            }
            nonce = Array(bytes.prefix(AESGCM.nonceByteCount))
            tag = Array(bytes.suffix(AESGCM.tagByteCount))
            ciphertext = Array(bytes[AESGCM.nonceByteCount..<(bytes.count - AESGCM.tagByteCount)])
        }

        /// Assembles a box from its parts.
        package init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) {
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }
    }

    /// Encrypts and authenticates `plaintext`.
    ///
    /// - Parameters:
    ///   - key: 32 bytes.
    ///   - nonce: 12 bytes, never reused with the same key; nil draws a random one.
    ///   - authenticating: Extra data that is authenticated but not encrypted.
    package static func seal(
        _ plaintext: some DataProtocol, key: [UInt8], nonce: [UInt8]? = nil, authenticating aad: some DataProtocol = Data()
    ) throws -> SealedBox {
        try checkKey(key)
        let nonce = try nonce ?? SecureRandom.bytes(count: nonceByteCount)
        guard nonce.count == nonceByteCount else {
            throw BuckiaError(.invalidConfiguration, "An AES-GCM nonce must be \(nonceByteCount) bytes; this one is \(nonce.count).")
        }
        let sealed: BuckiaCrypto.AES.GCM.SealedBox
        do {
            sealed = try BuckiaCrypto.AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: BuckiaCrypto.AES.GCM.Nonce(data: nonce), authenticating: aad)
        } catch {
            throw failure("encrypt", error)
        }
        return SealedBox(nonce: nonce, ciphertext: Array(sealed.ciphertext), tag: Array(sealed.tag))
    }

    /// Decrypts a box, verifying that neither it nor `aad` was changed.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` when authentication fails: the data was
    ///   tampered with, or the key is wrong.
    package static func open(_ box: SealedBox, key: [UInt8], authenticating aad: some DataProtocol = Data()) throws -> Data {
        try checkKey(key)
        // A box with the wrong nonce or tag length cannot have come from `seal`.
        guard box.nonce.count == nonceByteCount, box.tag.count == tagByteCount else {
            throw BuckiaError(
                .corrupt,
                "The encrypted data has a \(box.nonce.count)-byte nonce and a \(box.tag.count)-byte tag; "
                    + "AES-GCM boxes hold \(nonceByteCount) and \(tagByteCount).",
                operation: "decrypt")
        }
        let sealed: BuckiaCrypto.AES.GCM.SealedBox
        do {
            sealed = try BuckiaCrypto.AES.GCM.SealedBox(nonce: BuckiaCrypto.AES.GCM.Nonce(data: box.nonce), ciphertext: box.ciphertext, tag: box.tag)
        } catch {
            throw failure("decrypt", error)
        }
        do {
            return try BuckiaCrypto.AES.GCM.open(sealed, using: SymmetricKey(data: key), authenticating: aad)
        } catch {
            // The key and the box's sizes are checked above, so what is left to fail is the tag.
            // CryptoKit says so with `CryptoKitError.authenticationFailure`, swift-crypto's
            // BoringSSL backend with an error of its own: the type is not relied on.
            throw BuckiaError(
                .corrupt, "The encrypted data failed authentication: it was altered, or the key is not the one it was sealed with.",
                operation: "decrypt")
        }
    }

    private static func checkKey(_ key: [UInt8]) throws {
        guard key.count == keyByteCount else {
            throw BuckiaError(.invalidConfiguration, "An AES-256 key must be \(keyByteCount) bytes; this one is \(key.count).")
        }
    }

    private static func failure(_ step: String, _ error: any Error) -> BuckiaError {
        BuckiaError(.io, "AES-256-GCM could not \(step): \(error).", operation: step)
    }
}
