internal import BuckiaCrypto
import Foundation

/// Cryptographically secure random bytes: CryptoKit's random `SymmetricKey`, which draws from the
/// system's generator (`getrandom` on Linux, the kernel's generator on Apple platforms).
package enum SecureRandom {
    /// `count` random bytes.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a negative count, or one too large
    ///   to count in bits.
    package static func bytes(count: Int) throws -> [UInt8] {
        guard count >= 0, count <= Int.max / 8 else {
            throw BuckiaError(.invalidConfiguration, "Cannot draw \(count) random bytes; the count must be from 0 to \(Int.max / 8).")
        }
        guard count > 0 else { return [] }
        return SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Array($0) }
    }
}
