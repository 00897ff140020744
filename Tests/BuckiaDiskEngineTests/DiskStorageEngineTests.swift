import BuckiaCore
import BuckiaDiskEngine
import Foundation
import Testing

@Suite("Disk storage engine")
struct DiskStorageEngineTests {
    static let layouts: [StorageLayout] = [.flat, .gitStyle, .fanOut(depth: 2)]

    @Test("A 4,000-byte key round-trips and allKeys returns it after reopening", arguments: layouts)
    func longKey(_ layout: StorageLayout) async throws {
        let fixture = try DiskFixture()
        let key = CacheKey(verbatim: String(repeating: "long/../key ", count: 334).prefix(4000).description)
        #expect(key.value.utf8.count == 4000)
        try await fixture.open(layout: layout).write(Data("long".utf8), key: key)
        let reopened = try fixture.open(layout: layout)
        #expect(try await reopened.read(key: key) == Data("long".utf8))
        #expect(try await reopened.allKeys() == [key])
        #expect(try await reopened.keyCount() == 1)
        #expect(try await reopened.readAllDataAndKeys().map(\.key) == [key])
    }

    @Test("A 10,000-byte key is refused with invalidPath and nothing is written")
    func tooLongKey() async throws {
        let fixture = try DiskFixture()
        let engine = try fixture.open()
        let key = CacheKey(verbatim: String(repeating: "x", count: 10_000))
        let single = await #expect(throws: BuckiaError.self) { try await engine.write(Data("x".utf8), key: key) }
        #expect(single?.code == .invalidPath)
        let batch = await #expect(throws: BuckiaError.self) {
            try await engine.write([(CacheKey(verbatim: "fine"), Data("x".utf8)), (key, Data("x".utf8))])
        }
        #expect(batch?.code == .invalidPath)
        #expect(fixture.files().isEmpty, "no value or temporary file may be left behind")
        #expect(try await engine.keyCount() == 0)
    }

    @Test("Foreign files and folders are neither listed, counted nor removed", arguments: layouts)
    func foreignFiles(_ layout: StorageLayout) async throws {
        let fixture = try DiskFixture()
        let engine = try fixture.open(layout: layout)
        let keys = [CacheKey(verbatim: "a"), CacheKey(verbatim: "b")]
        try await engine.write(keys.map { ($0, Data($0.value.utf8)) })
        let folder = fixture.directory.appendingPathComponent(layout.folder(for: DiskFileName.fileName(for: keys[0])))
        for url in [
            fixture.directory.appendingPathComponent("README"), fixture.directory.appendingPathComponent(".DS_Store"),
            fixture.directory.appendingPathComponent("notes.txt"), folder.appendingPathComponent("README"),
            fixture.directory.appendingPathComponent(".tmp/.buckia-leftover.tmp"),
            fixture.directory.appendingPathComponent("zz/mzxw6"),
        ] {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("not a value".utf8).write(to: url)
        }
        let reopened = try fixture.open(layout: layout)
        #expect(try await reopened.allKeys() == keys)
        #expect(try await reopened.keyCount() == 2)
        #expect(try await reopened.readAllData() == keys.map { Data($0.value.utf8) })
        try await reopened.removeAllData()
        #expect(try await reopened.keyCount() == 0)
        #expect(FileManager.default.fileExists(atPath: fixture.directory.appendingPathComponent("README").path))
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("README").path))
    }

    @Test("Each value lives in the folder StorageLayout.folder(for:) names", arguments: layouts + [.fanOut(depth: 4)])
    func fanOutFolder(_ layout: StorageLayout) async throws {
        let fixture = try DiskFixture()
        let engine = try fixture.open(layout: layout)
        for raw in ["one", "two", "../up", String(repeating: "z", count: 500)] {
            let key = CacheKey(verbatim: raw)
            try await engine.write(Data(raw.utf8), key: key)
            let name = DiskFileName.fileName(for: key)
            let expected = fixture.directory.appendingPathComponent(layout.folder(for: name) + name)
            #expect(try engine.fileURL(for: key).path == expected.path)
            #expect(FileManager.default.fileExists(atPath: expected.path))
        }
        #expect(fixture.files().count == 4, "\(fixture.files())")
    }

    @Test("The file holds BKV2, createdAt, the key length, the value length, the CRC-32C of key and value, the key and then the value")
    func fileFormat() async throws {
        let fixture = try DiskFixture()
        let created = Date(timeIntervalSince1970: 1_700_000_000.25)
        let engine = try fixture.open(layout: .flat, now: { created })
        try await engine.write(Data("value".utf8), key: CacheKey(verbatim: "key"))
        let bytes = try Data(contentsOf: try engine.fileURL(for: CacheKey(verbatim: "key")))
        var expected = Data("BKV2".utf8)
        withUnsafeBytes(of: created.timeIntervalSince1970.bitPattern.littleEndian) { expected.append(contentsOf: $0) }
        expected.append(contentsOf: [3, 0, 0, 0])
        expected.append(contentsOf: [5, 0, 0, 0, 0, 0, 0, 0])
        // The CRC-32C of "keyvalue", which the key-then-value chaining equals.
        withUnsafeBytes(of: CRC32C.checksum(Data("keyvalue".utf8)).littleEndian) { expected.append(contentsOf: $0) }
        expected.append(contentsOf: Data("keyvalue".utf8))
        #expect(bytes == expected)
    }

    @Test("createdAt survives overwrites and reopening; updatedAt is the last write's time")
    func injectedClock() async throws {
        let fixture = try DiskFixture()
        let first = Date(timeIntervalSince1970: 1_700_000_000)
        let second = Date(timeIntervalSince1970: 1_700_000_060.5)
        let key = CacheKey(verbatim: "clocked")
        try await fixture.open(now: { first }).write(Data("1".utf8), key: key)
        let later = try fixture.open(now: { second })
        #expect(try await later.updatedAt(key: key) == first)
        try await later.write(Data("2".utf8), key: key)
        let reopened = try fixture.open()
        #expect(try await reopened.createdAt(key: key) == first)
        #expect(try await reopened.updatedAt(key: key) == second)
        #expect(try await reopened.read(key: key) == Data("2".utf8))
    }
}
