import BuckiaCore
import COpenSSL
import Foundation

/// Ed25519 signatures (RFC 8032) from the system's libcrypto: what a `EdDSA` JSON Web Token is
/// signed with, so that a verifier needs only the 32-byte public key.
package enum Ed25519 {
    /// The length of a private key (its seed) and of a public key, in bytes.
    package static let keyByteCount = 32
    /// The length of a signature, in bytes.
    package static let signatureByteCount = 64

    /// A fresh private key: 32 random bytes (every 32-byte string is a valid Ed25519 seed).
    package static func generatePrivateKey() throws -> [UInt8] {
        try SecureRandom.bytes(count: keyByteCount)
    }

    /// The public key of `privateKey`.
    package static func publicKey(of privateKey: [UInt8]) throws -> [UInt8] {
        let key = try makeKey(privateKey, isPrivate: true)
        defer { EVP_PKEY_free(key) }
        var length = keyByteCount
        var output = [UInt8](repeating: 0, count: keyByteCount)
        guard EVP_PKEY_get_raw_public_key(key, &output, &length) == 1, length == keyByteCount else {
            throw failure("derive the public key")
        }
        return output
    }

    /// The signature of `message` under `privateKey`.
    package static func sign(_ message: [UInt8], privateKey: [UInt8]) throws -> [UInt8] {
        let key = try makeKey(privateKey, isPrivate: true)
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw failure("sign") }
        defer { EVP_MD_CTX_free(context) }
        var signature = [UInt8](repeating: 0, count: signatureByteCount)
        var length = signatureByteCount
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1,
              EVP_DigestSign(context, &signature, &length, message, message.count) == 1,
              length == signatureByteCount
        else { throw failure("sign") }
        return signature
    }

    /// Whether `signature` is `message`'s signature under `publicKey`. A key or signature of the
    /// wrong length is simply not valid.
    package static func isValid(signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureByteCount, publicKey.count == keyByteCount,
              let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, publicKey, publicKey.count)
        else {
            ERR_clear_error()
            return false
        }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        let valid = EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1
            && EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        ERR_clear_error()
        return valid
    }

    private static func makeKey(_ bytes: [UInt8], isPrivate: Bool) throws -> OpaquePointer {
        guard bytes.count == keyByteCount else {
            throw BuckiaError(.invalidConfiguration, "An Ed25519 key is \(keyByteCount) bytes; this one is \(bytes.count).")
        }
        let key = isPrivate
            ? EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, bytes, bytes.count)
            : EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, bytes, bytes.count)
        guard let key else { throw failure(isPrivate ? "load the private key" : "load the public key") }
        return key
    }

    private static func failure(_ action: String) -> BuckiaError {
        let code = ERR_get_error()
        ERR_clear_error()
        return BuckiaError(.io, "libcrypto could not \(action) with Ed25519 (OpenSSL error \(code)); Buckia needs OpenSSL 1.1.1 or later.")
    }
}
