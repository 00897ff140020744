import BuckiaCore
import BuckiaDiskEngine
import Foundation
import Testing

@Suite("Disk storage engine: opening and configuration")
struct DiskStorageEngineOpeningTests {
    @Test("A directory below a regular file fails with a typed error and leaves the file untouched")
    func directoryBelowFile() async throws {
        let fixture = try DiskFixture()
        let file = fixture.base.appendingPathComponent("somefile")
        try Data("precious".utf8).write(to: file)
        for directory in [file.appendingPathComponent("sub"), file] {
            let error = #expect(throws: BuckiaError.self) { try DiskStorageEngine(directory: directory) }
            #expect(error?.code == .invalidPath, "\(String(describing: error))")
            let configured = await #expect(throws: BuckiaError.self) {
                try await DiskStorageEngine(configuration: EngineConfiguration(type: .disk, directory: directory.path))
            }
            #expect(configured?.code == .invalidPath)
        }
        #expect(try Data(contentsOf: file) == Data("precious".utf8))
    }

    @Test("Writing after the directory is replaced by a file fails with a typed error", arguments: [StorageLayout.flat, .gitStyle])
    func directoryReplaced(_ layout: StorageLayout) async throws {
        let fixture = try DiskFixture()
        let engine = try fixture.open(layout: layout)
        try FileManager.default.removeItem(at: fixture.directory)
        try Data("in the way".utf8).write(to: fixture.directory)
        let error = await #expect(throws: BuckiaError.self) { try await engine.write(Data("x".utf8), key: CacheKey(verbatim: "k")) }
        #expect(error?.code == .invalidPath, "\(String(describing: error))")
        #expect(try Data(contentsOf: fixture.directory) == Data("in the way".utf8))
    }

    @Test("Opening over 5,000 existing values reads none of them")
    func openDoesNotRead() async throws {
        let fixture = try DiskFixture()
        let keys = (0..<5_000).map { CacheKey(verbatim: "value-\($0)") }
        try await fixture.open(durable: false).write(keys.map { ($0, Data($0.value.utf8)) })
        // A damaged header would make any open-time scan fail; opening must not notice it.
        try DiskFixture.damage(try fixture.open().fileURL(for: keys[0]), writing: Array("XXXX".utf8))
        let reopened = try fixture.open()
        #expect(try await reopened.keyCount() == 5_000)
        #expect(try await reopened.read(key: keys[4_999]) == Data("value-4999".utf8))
        await #expect(throws: BuckiaError.self) { try await reopened.read(key: keys[0]) }
    }

    @Test(
        "Configuration options choose the layout and fsync",
        arguments: [
            ([:], StorageLayout.gitStyle, true), (["layout": "flat"], .flat, true), (["layout": "git"], .gitStyle, true),
            (["layout": "fanout:3", "fsync": "false"], .fanOut(depth: 3), false), (["fsync": "FALSE"], .gitStyle, false),
            (["fsync": "true"], .gitStyle, true),
        ])
    func configuration(_ options: [String: String], _ layout: StorageLayout, _ durable: Bool) async throws {
        let fixture = try DiskFixture()
        let engine = try await DiskStorageEngine(configuration: EngineConfiguration(type: .disk, directory: fixture.directory.path, options: options))
        #expect(engine.layout == layout)
        #expect(engine.durable == durable)
        #expect(engine.capabilities == [.persistent, .pagination])
        try await engine.write(Data("x".utf8), key: CacheKey(verbatim: "x"))
        #expect(try await engine.read(key: CacheKey(verbatim: "x")) == Data("x".utf8))
    }

    @Test(
        "A bad configuration is refused with invalidConfiguration",
        arguments: [
            (["layout": "sideways"], true), (["layout": "fanout:9"], true), (["fsync": "sometimes"], true), ([:], false),
        ])
    func badConfiguration(_ options: [String: String], _ withDirectory: Bool) async throws {
        let fixture = try DiskFixture()
        let configuration = EngineConfiguration(type: .disk, directory: withDirectory ? fixture.directory.path : nil, options: options)
        let error = await #expect(throws: BuckiaError.self) { try await DiskStorageEngine(configuration: configuration) }
        #expect(error?.code == .invalidConfiguration)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path), "a refused configuration creates nothing")
    }

    @Test("The registry opens the engine by its type name")
    func registry() async throws {
        let fixture = try DiskFixture()
        var registry = EngineRegistry()
        try registry.register(DiskStorageEngine.self)
        #expect(registry.contains(.disk))
        let engine = try await registry.makeEngine(for: EngineConfiguration(type: .disk, directory: fixture.directory.path))
        try await engine.write(Data("x".utf8), key: CacheKey(verbatim: "x"))
        #expect(try await engine.keyCount() == 1)
    }

    @Test("Temporary files stay in .tmp and are cleaned up after each write")
    func temporaryFiles() async throws {
        let fixture = try DiskFixture()
        let engine = try fixture.open(layout: .flat)
        try await engine.write((0..<20).map { (CacheKey(verbatim: "k\($0)"), Data([UInt8($0)])) })
        let temporary = fixture.directory.appendingPathComponent(DiskStorageEngine.temporaryFolderName)
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty)
        #expect(fixture.files().allSatisfy { !$0.hasPrefix(".") })
        // A removed .tmp is recreated by the next write.
        try FileManager.default.removeItem(at: temporary)
        try await engine.write(Data("again".utf8), key: CacheKey(verbatim: "again"))
        #expect(try await engine.read(key: CacheKey(verbatim: "again")) == Data("again".utf8))
    }

    @Test("remove keeps fan-out folders; removeAllData removes the emptied ones and keeps the directory")
    func folderPruning() async throws {
        let fixture = try DiskFixture()
        let engine = try fixture.open(layout: .fanOut(depth: 2))
        let keys = (0..<10).map { CacheKey(verbatim: "k\($0)") }
        try await engine.write(keys.map { ($0, Data()) })
        let folder = try engine.fileURL(for: keys[0]).deletingLastPathComponent()
        try await engine.remove(key: keys[0])
        try await engine.remove(key: CacheKey(verbatim: "never written"))
        #expect(FileManager.default.fileExists(atPath: folder.path))
        try await engine.removeAllData()
        let left = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path)
        #expect(left == [DiskStorageEngine.temporaryFolderName])
        try await engine.write(Data("back".utf8), key: keys[0])
        #expect(try await engine.allKeys() == [keys[0]])
    }
}
