import COpenSSL
import Foundation

/// Cryptographically secure random bytes from OpenSSL's generator.
package enum SecureRandom {
    /// `count` random bytes.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a negative count; ``BuckiaError``
    ///   if the generator is not seeded, which on a working system does not happen.
    package static func bytes(count: Int) throws -> [UInt8] {
        guard count >= 0 else {
            throw BuckiaError(.invalidConfiguration, "Cannot draw \(count) random bytes; the count must not be negative.")
        }
        var bytes = [UInt8](repeating: 0, count: count)
        try bytes.withUnsafeMutableBufferPointer { buffer in
            // RAND_bytes takes an Int32 length, so very large draws go in pieces.
            var offset = 0
            while offset < buffer.count, let base = buffer.baseAddress {
                let chunk = min(buffer.count - offset, Int(Int32.max))
                guard RAND_bytes(base + offset, Int32(chunk)) == 1 else {
                    ERR_clear_error()
                    throw BuckiaError(.io, "The system's secure random generator failed; check that OpenSSL can read /dev/urandom.")
                }
                offset += chunk
            }
        }
        return bytes
    }
}
