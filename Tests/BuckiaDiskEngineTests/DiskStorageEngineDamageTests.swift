import BuckiaCore
import BuckiaDiskEngine
import Foundation
import Testing

@Suite("Disk storage engine: damaged files")
struct DiskStorageEngineDamageTests {
    /// Ways a value file can be damaged from outside the engine.
    enum Damage: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case badMagic, emptyFile, truncatedHeader, truncatedKey, impossibleKeyLength, anotherKeysFile
        case truncatedValue, extendedValue, overwrittenValueByte, zeroedValueTail
        var testDescription: String { rawValue }
        /// Whether the header itself is damaged (else only the value is, and `createdAt` still reads).
        var harmsHeader: Bool { ![.truncatedValue, .extendedValue, .overwrittenValueByte, .zeroedValueTail].contains(self) }
    }

    @Test(
        "A damaged file reads as corrupt, naming the key, while other keys stay readable",
        arguments: Damage.allCases, ["target", String(repeating: "long", count: 100)])
    func damagedFile(_ damage: Damage, _ rawKey: String) async throws {
        let fixture = try DiskFixture()
        let engine = try fixture.open()
        let key = CacheKey(verbatim: rawKey)
        let other = CacheKey(verbatim: "other")
        try await engine.write(Data("target value".utf8), key: key)
        try await engine.write(Data("other value".utf8), key: other)
        let url = try engine.fileURL(for: key)
        switch damage {
        case .badMagic: try DiskFixture.damage(url, writing: Array("XXXX".utf8))
        case .emptyFile: try DiskFixture.damage(url, truncatingTo: 0)
        case .truncatedHeader: try DiskFixture.damage(url, truncatingTo: 10)
        case .truncatedKey: try DiskFixture.damage(url, truncatingTo: 18)
        case .impossibleKeyLength: try DiskFixture.damage(url, writing: [0xFF, 0xFF, 0xFF, 0xFF], at: 12)
        case .anotherKeysFile:
            try FileManager.default.removeItem(at: url)
            try FileManager.default.copyItem(at: try engine.fileURL(for: other), to: url)
        case .truncatedValue, .extendedValue, .overwrittenValueByte, .zeroedValueTail:
            let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? UInt64)
            switch damage {
            case .truncatedValue: try DiskFixture.damage(url, truncatingTo: size - 5)
            case .extendedValue: try DiskFixture.damage(url, writing: Array("!!".utf8), at: size)
            case .overwrittenValueByte: try DiskFixture.damage(url, writing: [UInt8(ascii: "T")], at: size - 12)
            default: try DiskFixture.damage(url, writing: [0, 0, 0, 0], at: size - 4)
            }
        }
        let error = await #expect(throws: BuckiaError.self) { try await engine.read(key: key) }
        #expect(error?.code == .corrupt)
        #expect(error?.path == key.value)
        if damage.harmsHeader {
            let createdError = await #expect(throws: BuckiaError.self) { try await engine.createdAt(key: key) }
            #expect(createdError?.code == .corrupt)
        }
        #expect(try await engine.read(key: other) == Data("other value".utf8))
        #expect(try await engine.keyCount() == 2, "counting reads no headers")
        // Writing the key again repairs it.
        try await engine.write(Data("repaired".utf8), key: key)
        #expect(try await engine.read(key: key) == Data("repaired".utf8))
        #expect(try await engine.allKeys() == [key, other].sorted())
    }

    // Regression: BKV1 files held no value length or checksum, so a truncated or overwritten
    // value read back as wrong bytes with no error.
    @Test("A file written before values carried a CRC (BKV1) still reads")
    func legacyFile() async throws {
        let fixture = try DiskFixture()
        let engine = try fixture.open()
        let key = CacheKey(verbatim: "old")
        try await engine.write(Data("placeholder".utf8), key: key)
        var legacy = Data("BKV1".utf8)
        withUnsafeBytes(of: (1_700_000_000.0).bitPattern.littleEndian) { legacy.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(3).littleEndian) { legacy.append(contentsOf: $0) }
        legacy.append(contentsOf: Array("old".utf8) + Array("old value".utf8))
        try legacy.write(to: try engine.fileURL(for: key))
        #expect(try await engine.read(key: key) == Data("old value".utf8))
        #expect(try await engine.createdAt(key: key) == Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test("A hashed file whose header holds another key makes listing fail as corrupt")
    func renamedHashedFile() async throws {
        let fixture = try DiskFixture()
        let engine = try fixture.open(layout: .flat)
        let first = CacheKey(verbatim: String(repeating: "a", count: 200))
        let second = CacheKey(verbatim: String(repeating: "b", count: 200))
        try await engine.write(Data("a".utf8), key: first)
        try await engine.write(Data("b".utf8), key: second)
        try FileManager.default.removeItem(at: try engine.fileURL(for: second))
        try FileManager.default.copyItem(at: try engine.fileURL(for: first), to: try engine.fileURL(for: second))
        let error = await #expect(throws: BuckiaError.self) { try await engine.allKeys() }
        #expect(error?.code == .corrupt)
    }
}
