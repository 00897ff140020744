#if !canImport(CryptoKit)
internal import COpenSSL
import Foundation

/// Elliptic-curve cryptography on Curve25519.
public enum Curve25519 {
    /// Ed25519 signatures (RFC 8032).
    ///
    /// libcrypto signs deterministically, as RFC 8032 specifies; Apple's CryptoKit adds
    /// randomness, so the same key and message give different (equally valid) signatures there.
    public enum Signing {
        static let keyByteCount = 32
        static let signatureByteCount = 64

        /// A signing key: its 32-byte seed. (CryptoKit's `init()`, a random key, is left out:
        /// Buckia draws the seed itself, so that loading it can report a failure.)
        public struct PrivateKey: Sendable {
            private let seed: [UInt8]
            /// The key that checks this key's signatures.
            public let publicKey: PublicKey

            /// The key whose seed is `rawRepresentation`.
            ///
            /// - Throws: ``CryptoKitError/incorrectKeySize`` unless it is 32 bytes;
            ///   ``CryptoKitError/underlyingCoreCryptoError(error:)`` if libcrypto cannot load it
            ///   (it has Ed25519 from OpenSSL 1.1.1).
            public init<D: ContiguousBytes>(rawRepresentation: D) throws {
                let bytes = rawRepresentation.withUnsafeBytes { Array($0) }
                guard bytes.count == keyByteCount else { throw CryptoKitError.incorrectKeySize }
                seed = bytes
                publicKey = try Self.withKey(bytes) { key in
                    var length = keyByteCount
                    var output = [UInt8](repeating: 0, count: keyByteCount)
                    guard EVP_PKEY_get_raw_public_key(key, &output, &length) == 1, length == keyByteCount else { throw libcryptoFailure() }
                    return try PublicKey(rawRepresentation: output)
                }
            }

            /// The 32-byte seed.
            public var rawRepresentation: Data { Data(seed) }

            /// The 64-byte signature of `data`.
            public func signature<D: DataProtocol>(for data: D) throws -> Data {
                let message = Array(data)
                return try Self.withKey(seed) { key in
                    guard let context = EVP_MD_CTX_new() else { throw libcryptoFailure() }
                    defer { EVP_MD_CTX_free(context) }
                    var signature = [UInt8](repeating: 0, count: signatureByteCount)
                    var length = signatureByteCount
                    guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1,
                          EVP_DigestSign(context, &signature, &length, message, message.count) == 1,
                          length == signatureByteCount
                    else { throw libcryptoFailure() }
                    return Data(signature)
                }
            }

            private static func withKey<R>(_ seed: [UInt8], _ body: (OpaquePointer) throws -> R) throws -> R {
                guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, seed.count) else { throw libcryptoFailure() }
                defer { EVP_PKEY_free(key) }
                return try body(key)
            }
        }

        /// A key that checks signatures: 32 bytes.
        public struct PublicKey: Sendable {
            private let bytes: [UInt8]

            /// The key `rawRepresentation`.
            ///
            /// - Throws: ``CryptoKitError/incorrectKeySize`` unless it is 32 bytes.
            public init<D: ContiguousBytes>(rawRepresentation: D) throws {
                let bytes = rawRepresentation.withUnsafeBytes { Array($0) }
                guard bytes.count == keyByteCount else { throw CryptoKitError.incorrectKeySize }
                self.bytes = bytes
            }

            /// The 32 bytes.
            public var rawRepresentation: Data { Data(bytes) }

            /// Whether `signature` is this key's signature of `data`. A signature of the wrong
            /// length, or a key that is not a point on the curve, is simply not valid.
            public func isValidSignature<S: DataProtocol, D: DataProtocol>(_ signature: S, for data: D) -> Bool {
                let signature = Array(signature)
                let message = Array(data)
                guard signature.count == signatureByteCount,
                      let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, bytes, bytes.count)
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
        }
    }
}
#endif
