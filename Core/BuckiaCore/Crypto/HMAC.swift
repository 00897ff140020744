internal import BuckiaCrypto
import Foundation

/// Keyed-hash message authentication codes (RFC 2104), for request signing and tokens: CryptoKit's
/// `HMAC` behind the byte-array shape Buckia's signers use.
package enum HMAC {
    /// HMAC-SHA256 of `message` under `key`.
    package static func sha256<Key: DataProtocol, Message: DataProtocol>(key: Key, message: Message) -> Digest {
        code(SHA256.self, key: key, message: message)
    }

    /// The MAC of `message` under `key` with the given hash function.
    ///
    /// - Throws: ``BuckiaError/Code/unsupported`` for CRC-32C, which is a checksum, not a
    ///   cryptographic hash.
    package static func authenticationCode<Key: DataProtocol, Message: DataProtocol>(
        _ algorithm: HashAlgorithm, key: Key, message: Message
    ) throws -> Digest {
        switch algorithm {
        case .md5: code(Insecure.MD5.self, key: key, message: message)
        case .sha1: code(Insecure.SHA1.self, key: key, message: message)
        case .sha256: code(SHA256.self, key: key, message: message)
        case .crc32c: throw BuckiaError(.unsupported, "HMAC needs a cryptographic hash; \(algorithm.rawValue) is a checksum.", operation: "hmac")
        }
    }

    private static func code<H: HashFunction, Key: DataProtocol, Message: DataProtocol>(_: H.Type, key: Key, message: Message) -> Digest {
        // One copy of the key (into the SymmetricKey) and one of the code (into the result).
        let symmetricKey = key.withContiguousStorageIfAvailable { SymmetricKey(data: UnsafeRawBufferPointer($0)) } ?? SymmetricKey(data: Array(key))
        return Digest(bytes: BuckiaCrypto.HMAC<H>.authenticationCode(for: message, using: symmetricKey).withUnsafeBytes { Array($0) })
    }

    /// Compares two MACs in time that does not depend on where they differ.
    package static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
