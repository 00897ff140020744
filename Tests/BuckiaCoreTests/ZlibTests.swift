import BuckiaCore
import Foundation
import Testing

/// A named input for the round-trip tables.
struct Payload: Sendable, CustomTestStringConvertible {
    let name: String
    let data: Data
    var testDescription: String { name }

    static let all: [Payload] = {
        var generator = SeededBytes(seed: 5)
        var large = generator.data(count: 5 * 1024 * 1024, compressible: true)
        large.replaceSubrange(0..<65_536, with: generator.data(count: 65_536))
        return [
            Payload(name: "empty", data: Data()),
            Payload(name: "1 byte", data: Data([0x7f])),
            Payload(name: "all 256 byte values", data: Data((0...255).map { UInt8($0) })),
            Payload(name: "5 MiB", data: large),
        ]
    }()
}

struct ZlibTests {
    @Test("Compression round-trips", arguments: CompressionFormat.allCases, Payload.all)
    func roundTrip(format: CompressionFormat, payload: Payload) throws {
        let compressed = try Zlib.compress(payload.data, format: format)
        #expect(try Zlib.decompress(compressed, format: format) == payload.data)
    }

    @Test("Every level round-trips", arguments: [0, 1, 6, 9] as [Int32])
    func levels(level: Int32) throws {
        let data = Payload.all[2].data + Data(String(repeating: "level ", count: 500).utf8)
        #expect(try Zlib.decompress(Zlib.compress(data, level: level)) == data)
    }

    @Test("A compression level outside -1...9 is invalid configuration", arguments: [-2, 10, 100] as [Int32])
    func badLevel(level: Int32) {
        let error = #expect(throws: BuckiaError.self) { try Deflater(level: level) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("Streaming in odd-sized pieces equals one-shot", arguments: CompressionFormat.allCases, [1, 7, 4093, 65_537])
    func streaming(format: CompressionFormat, pieceSize: Int) throws {
        var generator = SeededBytes(seed: UInt64(pieceSize))
        let data = generator.data(count: 300_001, compressible: true)

        let deflater = try Deflater(format: format)
        var compressed = Data()
        for start in stride(from: 0, to: data.count, by: pieceSize) {
            compressed += try deflater.update(data[start..<min(start + pieceSize, data.count)])
        }
        compressed += try deflater.finish()
        #expect(try deflater.finish().isEmpty)
        #expect(try Zlib.decompress(compressed, format: format) == data)

        let oneShot = try Zlib.compress(data, format: format)
        let inflater = try Inflater(format: format)
        var inflated = Data()
        for start in stride(from: 0, to: oneShot.count, by: pieceSize) {
            #expect(!inflater.isComplete)
            inflated += try inflater.update(oneShot[start..<min(start + pieceSize, oneShot.count)])
        }
        #expect(inflater.isComplete)
        try inflater.finish()
        #expect(inflated == (try Zlib.decompress(oneShot, format: format)))
        #expect(inflated == data)
    }

    @Test("Auto-detection reads zlib and gzip", arguments: [CompressionFormat.zlib, .gzip])
    func autoDetect(format: CompressionFormat) throws {
        let data = Data(ZlibInteropTests.fixtureText.utf8)
        #expect(try Zlib.decompress(Zlib.compress(data, format: format), format: nil) == data)
    }

    @Test("Truncated input is corrupt", arguments: CompressionFormat.allCases, [0.0, 0.01, 0.5, 1.0])
    func truncated(format: CompressionFormat, fraction: Double) throws {
        var generator = SeededBytes(seed: 9)
        let compressed = try Zlib.compress(generator.data(count: 100_000, compressible: true), format: format)
        // 1.0 drops only the very last byte.
        let keep = min(Int(Double(compressed.count) * fraction), compressed.count - 1)
        let error = #expect(throws: BuckiaError.self) { try Zlib.decompress(compressed.prefix(keep), format: format) }
        #expect(error?.code == .corrupt)
    }

    static let garbage: [(String, [UInt8])] = [
        ("text", Array("this was never compressed".utf8)),
        ("zlib header asking for a preset dictionary", [0x78, 0x3f, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02]),
        ("gzip magic with an unknown method", [0x1f, 0x8b, 0x09, 0x00, 0, 0, 0, 0, 0, 0x03, 0x01, 0x02]),
        ("zlib header then an invalid block type", [0x78, 0x9c, 0xff, 0xff, 0xff, 0xff]),
        ("random", { var generator = SeededBytes(seed: 11); return Array(generator.data(count: 4096)) }()),
    ]

    @Test("Garbage is corrupt", arguments: garbage)
    func rejectsGarbage(name: String, input: [UInt8]) {
        for format in [nil, CompressionFormat.zlib, .gzip] {
            let error = #expect(throws: BuckiaError.self) { try Zlib.decompress(Data(input), format: format) }
            #expect(error?.code == .corrupt, "\(name), format \(String(describing: format))")
        }
    }

    @Test("A damaged checksum trailer is corrupt", arguments: [CompressionFormat.zlib, .gzip])
    func damagedTrailer(format: CompressionFormat) throws {
        var compressed = try Zlib.compress(Data(ZlibInteropTests.fixtureText.utf8), format: format)
        // zlib ends with Adler-32; gzip with CRC-32 then the length.
        compressed[compressed.count - (format == .gzip ? 6 : 1)] ^= 0x01
        let error = #expect(throws: BuckiaError.self) { try Zlib.decompress(compressed, format: format) }
        #expect(error?.code == .corrupt)
    }

    @Test("Data after the end of the stream is corrupt", arguments: CompressionFormat.allCases)
    func trailingGarbage(format: CompressionFormat) throws {
        let compressed = try Zlib.compress(Data(ZlibInteropTests.fixtureText.utf8), format: format)
        let oneShot = #expect(throws: BuckiaError.self) { try Zlib.decompress(compressed + Data("x".utf8), format: format) }
        #expect(oneShot?.code == .corrupt)

        let inflater = try Inflater(format: format)
        _ = try inflater.update(compressed)
        #expect(inflater.isComplete)
        #expect(try inflater.update(Data()).isEmpty)
        let streamed = #expect(throws: BuckiaError.self) { try inflater.update(Data([0])) }
        #expect(streamed?.code == .corrupt)
    }

    @Test("The output cap stops a decompression bomb", arguments: CompressionFormat.allCases)
    func bombGuard(format: CompressionFormat) throws {
        let size = 16 * 1024 * 1024
        let bomb = try Zlib.compress(Data(count: size), format: format, level: 9)
        #expect(bomb.count < size / 500)

        let capped = #expect(throws: BuckiaError.self) {
            try Zlib.decompress(bomb, format: format, maximumOutput: 1024 * 1024)
        }
        #expect(capped?.code == .corrupt)
        let oneOver = #expect(throws: BuckiaError.self) {
            try Zlib.decompress(bomb, format: format, maximumOutput: Int64(size - 1))
        }
        #expect(oneOver?.code == .corrupt)
        #expect(try Zlib.decompress(bomb, format: format, maximumOutput: Int64(size)).count == size)
    }

    @Test("The output cap counts across streamed pieces")
    func bombGuardStreaming() throws {
        let bomb = try Zlib.compress(Data(count: 4 * 1024 * 1024))
        let inflater = try Inflater(maximumOutput: 3 * 1024 * 1024)
        let error = #expect(throws: BuckiaError.self) {
            for start in stride(from: 0, to: bomb.count, by: 97) {
                _ = try inflater.update(bomb[start..<min(start + 97, bomb.count)])
            }
        }
        #expect(error?.code == .corrupt)
    }
}

@Suite("CRC-32 and CRC-32C")
struct CRC32Tests {
    @Test("CRC-32C matches the standard check value, by hardware and by table, in any pieces")
    func castagnoli() {
        #expect(CRC32C.checksum(Data("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum(Data()) == 0)
        // RFC 3720 (iSCSI) B.4: 32 bytes of zeros, and of 0xFF.
        #expect(CRC32C.checksum(Data(count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum(Data(repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        let data = Data((0..<10_007).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        #expect(CRC32C.checksum(data.suffix(from: 3), seed: CRC32C.checksum(data.prefix(3))) == CRC32C.checksum(data))
        #expect(CRC32C.checksum(utf8: "caf\u{E9}") == CRC32C.checksum(Data("caf\u{E9}".utf8)))
    }

    @Test("CRC-32 matches the standard check value and chains across pieces")
    func checkValue() {
        #expect(CRC32.checksum(Data("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum(Data()) == 0)
        let whole = CRC32.checksum(Data("keyvalue".utf8))
        #expect(CRC32.checksum(Data("value".utf8), seed: CRC32.checksum(Data("key".utf8))) == whole)
    }
}
