import CZlib
import Foundation

/// CRC-32 (the IEEE polynomial, as zlib, gzip and PNG compute it): the checksum engines store
/// with every value, so a damaged value is reported as corrupt instead of returned.
///
/// zlib's implementation runs at several GB/s here; see Docs/Benchmarks.md for what it adds to
/// an engine's reads.
package enum CRC32 {
    /// The CRC-32 of `bytes`, continuing from `seed` (0 to start).
    package static func checksum<Bytes: DataProtocol>(_ bytes: Bytes, seed: UInt32 = 0) -> UInt32 {
        var crc = UInt(seed)
        for region in bytes.regions {
            region.withUnsafeBytes { raw in
                var offset = 0
                // zlib takes a 32-bit length; feed larger regions in pieces.
                while offset < raw.count {
                    let count = min(raw.count - offset, Int(Int32.max))
                    let base = raw.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) + offset }
                    crc = crc32(crc, base, uInt(count))
                    offset += count
                }
            }
        }
        return UInt32(truncatingIfNeeded: crc)
    }
}
