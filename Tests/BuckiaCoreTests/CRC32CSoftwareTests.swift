import Foundation
import Testing

@testable import BuckiaCore

@Suite("CRC-32C by table")
struct CRC32CSoftwareTests {
    /// Lengths around the three-stream blocks (3 × 256 and 3 × 8192 bytes) and their remainders.
    @Test("The table agrees with the processor's instruction, one stream or three", arguments: [
        0, 1, 7, 8, 9, 63, 767, 768, 769, 1_024, 4_096, 10_007, 24_575, 24_576, 24_576 + 768 + 5, 100_003,
    ])
    func agrees(_ count: Int) {
        let data = Data((0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 131 &+ 7) ^ ($0 >> 9)) })
        #expect(CRC32C.softwareChecksum(data) == CRC32C.checksum(data))
        #expect(CRC32C.softwareChecksum(Data("123456789".utf8)) == 0xE306_9283)
    }

    @Test("A checksum continued over pieces equals the checksum of the whole", arguments: [1, 700, 769, 8_192, 30_000])
    func continues(_ piece: Int) {
        let data = Data((0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 11) })
        var crc: UInt32 = 0
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + piece)
            crc = CRC32C.checksum(data[offset..<end], seed: crc)
            offset = end
        }
        #expect(crc == CRC32C.checksum(data))
        #expect(crc == CRC32C.softwareChecksum(data))
    }
}
