import Foundation
import Testing

@testable import BuckiaCore

@Suite("CRC-32C by table")
struct CRC32CSoftwareTests {
    @Test("The table agrees with the processor's instruction", arguments: [0, 1, 7, 8, 9, 63, 4096, 10_007])
    func agrees(_ count: Int) {
        let data = Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) })
        #expect(CRC32C.softwareChecksum(data) == CRC32C.checksum(data))
        #expect(CRC32C.softwareChecksum(Data("123456789".utf8)) == 0xE306_9283)
    }
}
