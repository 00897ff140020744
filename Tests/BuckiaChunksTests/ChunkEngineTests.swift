import BuckiaChunkEngine
import BuckiaChunks
import BuckiaCore
import Foundation
import Testing

@Suite("Chunk engine")
struct ChunkEngineTests {
    static let key = String(repeating: "5a", count: 32)

    @Test("bad configurations are refused, naming the option, never the key", arguments: [
        ("unknown option", ["layout": "git"], [String: String]()),
        ("unknown organization", ["organization": "spiral"], [:]),
        ("bad average size", ["average-chunk-size": "big"], [:]),
        ("average size out of bounds", ["average-chunk-size": "100"], [:]),
        ("unknown compression", ["compression": "lz4"], [:]),
        ("key variable not set", ["encryption-key-env": "MISSING"], [:]),
        ("key too short", ["encryption-key-env": "KEY"], ["KEY": "abcdef"]),
        ("verify not a boolean", ["verify": "maybe"], [:]),
    ])
    func refusesBadConfiguration(_ what: String, _ options: [String: String], _ environment: [String: String]) throws {
        let scratch = try Scratch()
        do {
            _ = try ChunkStorageEngine(configuration: EngineConfiguration(type: .chunk, directory: scratch.url.path, options: options), environment: environment)
            Issue.record("\(what): opened")
        } catch let error as BuckiaError {
            #expect(error.code == .invalidConfiguration, "\(what): \(error)")
            #expect(!error.description.contains("abcdef"), "\(what): the message repeats the key")
        }
    }

    @Test("a directory is required")
    func needsDirectory() async {
        await #expect(throws: BuckiaError.self) { try await ChunkStorageEngine(configuration: EngineConfiguration(type: .chunk)) }
    }

    @Test("values opened with the wrong key fail with unauthorized; with the right one they read back")
    func wrongKey() async throws {
        let scratch = try Scratch()
        let options = ["encryption-key-env": "KEY", "compression": "zlib"]
        let configuration = EngineConfiguration(type: .chunk, directory: scratch.url.path, options: options)
        let engine = try ChunkStorageEngine(configuration: configuration, environment: ["KEY": Self.key])
        let value = Data(String(repeating: "secret ", count: 5000).utf8)
        try await engine.write(value, key: CacheKey(verbatim: "v"))
        let intruder = try ChunkStorageEngine(configuration: configuration, environment: ["KEY": String(repeating: "a5", count: 32)])
        do {
            _ = try await intruder.read(key: CacheKey(verbatim: "v"))
            Issue.record("read with the wrong key")
        } catch let error as BuckiaError {
            #expect(error.code == .unauthorized)
        }
        let reopened = try ChunkStorageEngine(configuration: configuration, environment: ["KEY": Self.key])
        #expect(try await reopened.read(key: CacheKey(verbatim: "v")) == value)
        // Nothing on disk holds the plaintext.
        let stored = try FileManager.default.subpathsOfDirectory(atPath: scratch.url.path + "/chunks")
            .compactMap { try? Data(contentsOf: scratch.url.appendingPathComponent("chunks/" + $0)) }
        #expect(!stored.isEmpty && stored.allSatisfy { $0.range(of: Data("secret".utf8)) == nil })
    }

    @Test("values sharing content share chunks; garbage collection removes only unreferenced ones")
    func sharingAndGarbage() async throws {
        let scratch = try Scratch()
        let engine = try ChunkStorageEngine(directory: scratch.url, chunker: try FastCDC(averageSize: 1024))
        let common = noise(30_000, seed: 5)
        try await engine.write(common + noise(3000, seed: 6), key: CacheKey(verbatim: "a"))
        try await engine.write(common + noise(3000, seed: 7), key: CacheKey(verbatim: "b"))
        let a = try #require(try await engine.manifest(for: CacheKey(verbatim: "a")))
        let b = try #require(try await engine.manifest(for: CacheKey(verbatim: "b")))
        let shared = a.uniqueChunks.intersection(b.uniqueChunks)
        #expect(shared.count >= 15, "values with 30 kB in common share \(shared.count) chunks")
        try await engine.remove(key: CacheKey(verbatim: "a"))
        let removed = try await engine.collectGarbage()
        #expect(removed == a.uniqueChunks.subtracting(b.uniqueChunks).count)
        #expect(try await engine.read(key: CacheKey(verbatim: "b")) == common + noise(3000, seed: 7))
        #expect(try await engine.collectGarbage() == 0)
        try await engine.removeAllData()
        #expect(try await engine.collectGarbage() == b.uniqueChunks.count)
        #expect(try await engine.chunks.enumeration?.allChunks().isEmpty == true)
    }
}

@Suite("Chunk engine documentation")
struct ChunkEngineDocumentationTests {
    @Test("Docs/Configuration.md lists exactly the options the chunk engine reads")
    func optionsAreDocumented() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Docs/Configuration.md")
        let rows = try String(contentsOf: page, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("| `chunk` | `") }
        let documented = Set(rows.compactMap { $0.split(separator: "`").dropFirst(3).first.map(String.init) })
        #expect(documented == ChunkStorageEngine.knownOptions)
    }
}
