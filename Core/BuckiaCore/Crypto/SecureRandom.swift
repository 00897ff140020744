import COpenSSL
import Foundation

/// Cryptographically secure random bytes from OpenSSL's generator.
public enum SecureRandom {
    /// `count` random bytes.
    ///
    /// - Throws: ``BuckiaError`` if the generator is not seeded, which on a working system
    ///   does not happen.
    public static func bytes(count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        guard RAND_bytes(&bytes, Int32(count)) == 1 else {
            throw BuckiaError(.io, "The system's secure random generator failed; check that OpenSSL can read /dev/urandom.")
        }
        return bytes
    }
}
