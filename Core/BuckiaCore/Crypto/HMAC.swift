import COpenSSL
import Foundation

/// Keyed-hash message authentication codes (RFC 2104), for request signing and tokens.
package enum HMAC {
    /// HMAC-SHA256 of `message` under `key`.
    package static func sha256<Key: DataProtocol, Message: DataProtocol>(key: Key, message: Message) -> Digest {
        code(EVP_sha256(), key: key, message: message)
    }

    /// The MAC of `message` under `key` with the given hash function.
    ///
    /// - Throws: ``BuckiaError/Code/unsupported`` for CRC-32C, which is a checksum, not a
    ///   cryptographic hash.
    package static func authenticationCode<Key: DataProtocol, Message: DataProtocol>(
        _ algorithm: HashAlgorithm, key: Key, message: Message
    ) throws -> Digest {
        guard let evp = algorithm.evp else {
            throw BuckiaError(.unsupported, "HMAC needs a cryptographic hash; \(algorithm.rawValue) is a checksum.", operation: "hmac")
        }
        return code(evp, key: key, message: message)
    }

    private static func code<Key: DataProtocol, Message: DataProtocol>(_ evp: OpaquePointer?, key: Key, message: Message) -> Digest {
        let keyBytes = Array(key)
        let messageBytes = Array(message)
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        keyBytes.withUnsafeBytes { keyBuffer in
            messageBytes.withUnsafeBytes { messageBuffer in
                _ = COpenSSL.HMAC(
                    evp, keyBuffer.baseAddress, Int32(keyBuffer.count),
                    messageBuffer.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBuffer.count,
                    &output, &length)
            }
        }
        return Digest(bytes: Array(output.prefix(Int(length))))
    }

    /// Compares two MACs in time that does not depend on where they differ.
    package static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
