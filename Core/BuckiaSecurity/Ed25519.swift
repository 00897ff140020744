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

/// Keys from passphrases, for secret stores encrypted at rest.
package enum PassphraseKey {
    /// The scrypt cost parameters: N = 2¹⁵, r = 8, p = 1 takes 32 MiB and about 0.1 s, the
    /// interactive setting RFC 7914's authors and OWASP recommend.
    package struct ScryptCost: Sendable, Hashable, Codable {
        package var n: UInt64
        package var r: UInt64
        package var p: UInt64
        package static let interactive = ScryptCost(n: 1 << 15, r: 8, p: 1)

        /// The memory scrypt needs for these costs, with room for libcrypto's bookkeeping.
        var memory: UInt64 { 128 * r * n + 128 * r * p + (1 << 20) }

        /// Refuses costs that are too weak to protect anything or so large that they would exhaust
        /// memory or time before the seal is even checked (a hostile file can name any numbers):
        /// N a power of two from 2¹⁴, r from 1 to 32, 128·N·r at most 256 MiB, p from 1 to 4.
        func check() throws {
            guard n >= 1 << 14, n <= 1 << 21, n & (n - 1) == 0, r >= 1, r <= 32, 128 * n * r <= 256 << 20, p >= 1, p <= 4 else {
                throw BuckiaError(
                    .corrupt,
                    "The secret store names scrypt costs N=\(n), r=\(r), p=\(p); Buckia accepts N a power of two from 2^14, r 1–32 with 128·N·r at most 256 MiB, and p 1–4.")
            }
        }
    }

    /// A 32-byte key from `passphrase` and `salt` with scrypt (RFC 7914).
    package static func scrypt(_ passphrase: Secret, salt: [UInt8], cost: ScryptCost) throws -> [UInt8] {
        try cost.check()
        var key = [UInt8](repeating: 0, count: 32)
        let password = Array(passphrase.exposedValue.utf8)
        let ok = password.withUnsafeBufferPointer { passwordBuffer in
            passwordBuffer.withMemoryRebound(to: CChar.self) { chars in
                EVP_PBE_scrypt(chars.baseAddress, chars.count, salt, salt.count, cost.n, cost.r, cost.p, cost.memory, &key, key.count)
            }
        }
        guard ok == 1 else {
            ERR_clear_error()
            throw BuckiaError(.io, "libcrypto's scrypt failed (N=\(cost.n), r=\(cost.r), p=\(cost.p)); there may not be enough memory.")
        }
        return key
    }
}
