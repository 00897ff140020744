#if !canImport(CryptoKit)
internal import COpenSSL
import Foundation

extension Curve25519 {
    /// X25519 key agreement (RFC 7748), CryptoKit's `Curve25519.KeyAgreement`: what HPKE's
    /// DHKEM(X25519, HKDF-SHA256) encapsulates keys with.
    public enum KeyAgreement {
        static let keyByteCount = 32

        /// A private key: 32 bytes (every 32-byte string is one; X25519 clamps it). (CryptoKit's
        /// `init()`, a random key, is left out, as for signing keys: a caller draws the bytes,
        /// so that loading them can report a failure.)
        public struct PrivateKey: Sendable {
            private let bytes: [UInt8]
            /// The key's public half.
            public let publicKey: PublicKey

            /// The key `rawRepresentation`.
            ///
            /// - Throws: ``CryptoKitError/incorrectKeySize`` unless it is 32 bytes.
            public init<D: ContiguousBytes>(rawRepresentation: D) throws {
                let bytes = rawRepresentation.withUnsafeBytes { Array($0) }
                guard bytes.count == keyByteCount else { throw CryptoKitError.incorrectKeySize }
                self.bytes = bytes
                publicKey = try Self.publicKey(of: bytes)
            }

            /// The 32 bytes.
            public var rawRepresentation: Data { Data(bytes) }

            /// The X25519 shared secret with `publicKeyShare`.
            ///
            /// - Throws: ``CryptoKitError/underlyingCoreCryptoError(error:)`` when libcrypto
            ///   refuses, as it does for a peer key of small order (an all-zero result).
            public func sharedSecretFromKeyAgreement(with publicKeyShare: PublicKey) throws -> SharedSecret {
                guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, bytes, bytes.count) else { throw libcryptoFailure() }
                defer { EVP_PKEY_free(key) }
                let peerBytes = publicKeyShare.rawRepresentation.withUnsafeBytes { Array($0) }
                guard let peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, peerBytes, peerBytes.count) else { throw libcryptoFailure() }
                defer { EVP_PKEY_free(peer) }
                guard let context = EVP_PKEY_CTX_new(key, nil) else { throw libcryptoFailure() }
                defer { EVP_PKEY_CTX_free(context) }
                var secret = [UInt8](repeating: 0, count: keyByteCount)
                var length = keyByteCount
                guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer) == 1,
                      EVP_PKEY_derive(context, &secret, &length) == 1, length == keyByteCount
                else { throw libcryptoFailure() }
                // RFC 7748 §6.1: an all-zero secret means a small-order peer key.
                guard secret.contains(where: { $0 != 0 }) else { throw CryptoKitError.underlyingCoreCryptoError(error: 0) }
                return SharedSecret(bytes: secret)
            }

            private static func publicKey(of bytes: [UInt8]) throws -> PublicKey {
                guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, bytes, bytes.count) else { throw libcryptoFailure() }
                defer { EVP_PKEY_free(key) }
                var length = keyByteCount
                var output = [UInt8](repeating: 0, count: keyByteCount)
                guard EVP_PKEY_get_raw_public_key(key, &output, &length) == 1, length == keyByteCount else { throw libcryptoFailure() }
                return PublicKey(unchecked: output)
            }
        }

        /// A public key: 32 bytes.
        public struct PublicKey: Sendable {
            private let bytes: [UInt8]

            init(unchecked bytes: [UInt8]) { self.bytes = bytes }

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
        }
    }
}

/// The result of a key agreement: key material to derive keys from, never a key itself.
public struct SharedSecret: ContiguousBytes, Sendable {
    let bytes: [UInt8]

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }
}
#endif
