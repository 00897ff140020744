import CChecksum
import Foundation

/// CRC-32C (Castagnoli), computed with the processor's CRC instruction where it has one
/// (SSE 4.2 on x86-64, ARMv8's CRC extension): the checksum the engines store with every
/// value, so a damaged value is reported as corrupt instead of returned.
///
/// It was chosen over zlib's CRC-32 by measurement: checking every value of a 100,000-value
/// SQLite read-all cost 83 % with zlib's and under 10 % with this (Docs/Benchmarks.md).
package enum CRC32C {
    /// The CRC-32C of `bytes`, continuing from `seed` (0 to start).
    package static func checksum<Bytes: DataProtocol>(_ bytes: Bytes, seed: UInt32 = 0) -> UInt32 {
        var crc = seed
        for region in bytes.regions {
            region.withUnsafeBytes { raw in crc = buckia_crc32c(crc, raw.baseAddress, raw.count) }
        }
        return crc
    }

    /// The CRC-32C of `data`, continuing from `seed`: the overload engines call per value,
    /// without the generic `regions` walk.
    package static func checksum(_ data: Data, seed: UInt32 = 0) -> UInt32 {
        data.withUnsafeBytes { buckia_crc32c(seed, $0.baseAddress, $0.count) }
    }

    /// The CRC-32C of raw bytes, continuing from `seed`.
    package static func checksum(_ buffer: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        buckia_crc32c(seed, buffer.baseAddress, buffer.count)
    }

    /// The CRC-32C computed by table only, whatever the processor offers: for tests that
    /// check the two agree.
    static func softwareChecksum<Bytes: DataProtocol>(_ bytes: Bytes, seed: UInt32 = 0) -> UInt32 {
        var crc = seed
        for region in bytes.regions {
            region.withUnsafeBytes { raw in crc = buckia_crc32c_software(crc, raw.baseAddress, raw.count) }
        }
        return crc
    }

    /// The CRC-32C of a string's UTF-8 bytes, continuing from `seed`, without copying them
    /// where the string is stored contiguously.
    package static func checksum(utf8 text: String, seed: UInt32 = 0) -> UInt32 {
        if let crc = text.utf8.withContiguousStorageIfAvailable({ buckia_crc32c(seed, $0.baseAddress, $0.count) }) {
            return crc
        }
        return checksum(Array(text.utf8), seed: seed)
    }
}
