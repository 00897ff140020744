internal import BuckiaCrypto
import BuckiaCore
import Foundation

/// Ed25519 signatures (RFC 8032) through CryptoKit's `Curve25519.Signing`: what an `EdDSA` JSON
/// Web Token is signed with, so that a verifier needs only the 32-byte public key.
///
/// libcrypto (Linux) signs deterministically, as RFC 8032 specifies; Apple's CryptoKit adds
/// randomness, so a token signed on a Mac has different signature bytes from one signed here,
/// and both verify everywhere.
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
        Array(try key(privateKey).publicKey.rawRepresentation)
    }

    /// The signature of `message` under `privateKey`.
    package static func sign(_ message: [UInt8], privateKey: [UInt8]) throws -> [UInt8] {
        let key = try key(privateKey)
        do {
            return Array(try key.signature(for: message))
        } catch {
            throw BuckiaError(.io, "Ed25519 could not sign: \(error).")
        }
    }

    /// Whether `signature` is `message`'s signature under `publicKey`. A key or signature of the
    /// wrong length is simply not valid.
    package static func isValid(signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureByteCount, publicKey.count == keyByteCount else { return false }
        do {
            return try Curve25519.Signing.PublicKey(rawRepresentation: publicKey).isValidSignature(signature, for: message)
        } catch {
            // The length is checked above, so this is a key CryptoKit will not load: not valid.
            return false
        }
    }

    private static func key(_ bytes: [UInt8]) throws -> Curve25519.Signing.PrivateKey {
        guard bytes.count == keyByteCount else {
            throw BuckiaError(.invalidConfiguration, "An Ed25519 key is \(keyByteCount) bytes; this one is \(bytes.count).")
        }
        do {
            return try Curve25519.Signing.PrivateKey(rawRepresentation: bytes)
        } catch {
            throw BuckiaError(.io, "Ed25519 could not load the private key: \(error). Buckia needs OpenSSL 1.1.1 or later on Linux.")
        }
    }
}
