import COpenSSL
import Foundation

/// AES-256 in Galois/Counter Mode: encryption that also detects tampering.
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
        let input = Array(plaintext)
        let aadBytes = Array(aad)
        let context = try makeContext()
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var length: Int32 = 0
        var total = 0
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceByteCount), nil) == 1,
              EVP_EncryptInit_ex(context, nil, nil, key, nonce) == 1,
              aadBytes.isEmpty || EVP_EncryptUpdate(context, nil, &length, aadBytes, Int32(aadBytes.count)) == 1,
              EVP_EncryptUpdate(context, &output, &length, input, Int32(input.count)) == 1
        else { throw failure("encrypt") }
        total = Int(length)
        let finalOK = output.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress! + total, &length) == 1
        }
        guard finalOK else { throw failure("encrypt") }
        total += Int(length)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), &tag) == 1 else {
            throw failure("encrypt")
        }
        return SealedBox(nonce: nonce, ciphertext: Array(output.prefix(total)), tag: tag)
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
        let aadBytes = Array(aad)
        let context = try makeContext()
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: box.ciphertext.count + 16)
        var length: Int32 = 0
        var tag = box.tag
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceByteCount), nil) == 1,
              EVP_DecryptInit_ex(context, nil, nil, key, box.nonce) == 1,
              aadBytes.isEmpty || EVP_DecryptUpdate(context, nil, &length, aadBytes, Int32(aadBytes.count)) == 1,
              EVP_DecryptUpdate(context, &output, &length, box.ciphertext, Int32(box.ciphertext.count)) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), &tag) == 1
        else { throw failure("decrypt") }
        let total = Int(length)
        let verified = output.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + total, &length) == 1
        }
        guard verified else {
            throw BuckiaError(
                .corrupt, "The encrypted data failed authentication: it was altered, or the key is not the one it was sealed with.",
                operation: "decrypt")
        }
        return Data(output.prefix(total + Int(length)))
    }

    private static func checkKey(_ key: [UInt8]) throws {
        guard key.count == keyByteCount else {
            throw BuckiaError(.invalidConfiguration, "An AES-256 key must be \(keyByteCount) bytes; this one is \(key.count).")
        }
    }

    private static func makeContext() throws -> OpaquePointer {
        guard let context = EVP_CIPHER_CTX_new() else { throw failure("allocate") }
        return context
    }

    private static func failure(_ step: String) -> BuckiaError {
        ERR_clear_error()
        return BuckiaError(.io, "OpenSSL failed to \(step) with AES-256-GCM.", operation: step)
    }
}
