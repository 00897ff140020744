import BuckiaCore
import Foundation

/// Keys from passphrases, for secret stores encrypted at rest.
package enum PassphraseKey {
    /// The scrypt cost parameters: N = 2¹⁵, r = 8, p = 1 takes 32 MiB and about 0.1 s, the
    /// interactive setting RFC 7914's authors and OWASP recommend.
    package struct ScryptCost: Sendable, Hashable, Codable {
        package var n: UInt64
        package var r: UInt64
        package var p: UInt64
        package static let interactive = ScryptCost(n: 1 << 15, r: 8, p: 1)

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
        // check() bounds every cost far below Int's range.
        return try Scrypt.deriveKey(
            password: Array(passphrase.exposedValue.utf8), salt: salt, n: Int(cost.n), r: Int(cost.r), p: Int(cost.p), length: 32)
    }
}
