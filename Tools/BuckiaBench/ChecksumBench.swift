#if os(macOS) || os(Linux)
import Buckia
import CChecksum
import Foundation

extension BenchCommand {
    /// `checksums`: what checking a CRC-32C on every value costs, per value size, against
    /// the limit of touching the bytes at all (a sum of their words) — one stream of the
    /// processor's instruction, three interleaved streams (what the engines use), and the table.
    static func checksums(_ arguments: [String]) -> Int32 {
        var total = 100 << 20
        var sizes = [64, 1_024, 16_384, 1 << 20]
        var repeats = 7
        var index = 0
        while index + 1 < arguments.count {
            let value = arguments[index + 1]
            switch arguments[index] {
            case "--total-mib": total = max(1, Int(value) ?? 100) << 20
            case "--value-bytes": sizes = value.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            case "--repeat": repeats = max(1, Int(value) ?? 7)
            default: break
            }
            index += 2
        }
        let data = Data((0..<total).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        print("CRC-32C over \(total >> 20) MiB in values of each size, median of \(repeats) runs (GB/s; higher is better)")
        print("value bytes     read words    one stream   three streams    table")
        data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            for size in sizes {
                func rate(_ body: (UnsafeRawPointer, Int) -> UInt32) -> Double {
                    var times: [Double] = []
                    var sink: UInt32 = 0
                    for _ in 0..<repeats {
                        let start = ContinuousClock.now
                        var offset = 0
                        while offset + size <= total {
                            sink ^= body(base + offset, size)
                            offset += size
                        }
                        let elapsed = ContinuousClock.now - start
                        times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                    }
                    if sink == 0x1234_5678 { print("") }  // keeps the work from being optimized away
                    return Double(total) / times.sorted()[times.count / 2] / 1e9
                }
                let words = rate { pointer, count in
                    var sum: UInt64 = 0
                    for word in UnsafeRawBufferPointer(start: pointer, count: count & ~7).bindMemory(to: UInt64.self) { sum &+= word }
                    return UInt32(truncatingIfNeeded: sum)
                }
                let one = rate { pointer, count in ~buckia_crc32c_hardware(~0, pointer.assumingMemoryBound(to: UInt8.self), count) }
                let three = rate { pointer, count in CRC32C.checksum(UnsafeRawBufferPointer(start: pointer, count: count)) }
                let table = rate { pointer, count in buckia_crc32c_software(0, pointer, count) }
                print(String(format: "%11d %14.2f %13.2f %15.2f %8.2f", size, words, one, three, table))
            }
        }
        return 0
    }
}
#endif
