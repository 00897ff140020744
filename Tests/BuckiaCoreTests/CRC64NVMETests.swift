import Foundation
import Testing

@testable import BuckiaCore

@Suite("CRC-64/NVME")
struct CRC64NVMETests {
    /// The catalogue's check value, and values from a bit-at-a-time reference (Python, the
    /// polynomial's definition) for inputs long enough to take the eight-byte path.
    @Test("Known values: the check string, nothing, and 768 bytes", arguments: [
        (Data("123456789".utf8), 0xAE8B_1486_0A79_9888), (Data(), 0),
        (Data((0..<768).map { UInt8(truncatingIfNeeded: $0) }), 0x4EF1_921C_56F5_C1A6),
    ] as [(Data, UInt64)])
    func known(_ data: Data, _ expected: UInt64) {
        #expect(CRC64NVME.checksum(data) == expected)
    }

    @Test("A checksum continued over pieces of any length equals the checksum of the whole", arguments: [1, 3, 8, 9, 4_096, 30_001])
    func continues(_ piece: Int) {
        let data = Data((0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 11) })
        var crc: UInt64 = 0
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + piece)
            crc = CRC64NVME.checksum(data[offset..<end], seed: crc)
            offset = end
        }
        #expect(crc == CRC64NVME.checksum(data))
    }
}
