import Foundation

/// CRC-64/NVME (the NVM Express polynomial `0xAD93D23594C93659`, reflected, all-ones start and
/// final XOR): the checksum the AWS SDKs send by default since 2025 (`x-amz-checksum-crc64nvme`),
/// so a server that keeps S3's promises checks it. `"123456789"` gives `0xAE8B14860A799888`.
///
/// Slicing by eight, in Swift: eight table lookups per eight bytes.
package enum CRC64NVME {
    /// The CRC of `bytes`, continuing from `seed` (0 to start: the finished CRC of nothing).
    package static func checksum<Bytes: DataProtocol>(_ bytes: Bytes, seed: UInt64 = 0) -> UInt64 {
        var crc = ~seed
        for region in bytes.regions {
            region.withUnsafeBytes { raw in
                let input = raw.bindMemory(to: UInt8.self)
                crc = update(crc, input)
            }
        }
        return ~crc
    }

    private static func update(_ start: UInt64, _ input: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var crc = start
        var index = 0
        let count = input.count
        tables.withUnsafeBufferPointer { table in
            while count - index >= 8 {
                var word = crc
                for byte in 0..<8 { word ^= UInt64(input[index + byte]) << (8 * UInt64(byte)) }
                crc = table[7 * 256 + Int(word & 0xFF)] ^ table[6 * 256 + Int((word >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((word >> 16) & 0xFF)] ^ table[4 * 256 + Int((word >> 24) & 0xFF)]
                    ^ table[3 * 256 + Int((word >> 32) & 0xFF)] ^ table[2 * 256 + Int((word >> 40) & 0xFF)]
                    ^ table[256 + Int((word >> 48) & 0xFF)] ^ table[Int(word >> 56)]
                index += 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt64(input[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
        }
        return crc
    }

    /// Eight tables of 256: the first is the byte-at-a-time table of the reflected polynomial,
    /// table k the CRC of a byte followed by k zero bytes.
    private static let tables: [UInt64] = {
        let polynomial: UInt64 = 0x9A6C_9329_AC4B_C9B5  // 0xAD93D23594C93659, bits reversed
        var tables = [UInt64](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt64(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            tables[byte] = crc
        }
        for table in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(table - 1) * 256 + byte]
                tables[table * 256 + byte] = tables[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return tables
    }()
}
