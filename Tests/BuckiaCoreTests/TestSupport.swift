import BuckiaCore
import Foundation

/// Deterministic pseudo-random bytes (SplitMix64), so failures reproduce exactly.
struct SeededBytes {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` bytes: incompressible when `compressible` is false, text-like runs otherwise.
    mutating func data(count: Int, compressible: Bool = false) -> Data {
        var bytes = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            let word = next()
            for shift in stride(from: 0, to: 64, by: 8) where index < count {
                let byte = UInt8(truncatingIfNeeded: word >> UInt64(shift))
                bytes[index] = compressible ? UInt8(ascii: "a") + byte % 6 : byte
                index += 1
            }
        }
        return Data(bytes)
    }
}

/// A fresh directory under the system temporary directory, removed by ``remove()``.
struct ScratchDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("buckia-core-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name, isDirectory: false) }

    /// The names in the directory, sorted.
    func contents() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Bytes from a hex literal in a test table; an invalid literal is a bug in the table.
func bytes(hex: String) -> [UInt8] {
    guard let decoded = Hex.decode(hex) else { fatalError("invalid hex in a test table: \(hex)") }
    return decoded
}
