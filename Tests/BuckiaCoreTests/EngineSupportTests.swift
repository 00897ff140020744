import BuckiaCore
import Foundation
import Testing

@Suite("Engine support types")
struct EngineSupportTests {
    @Test("Layouts parse from configuration text", arguments: [
        ("flat", StorageLayout.flat), ("git", .gitStyle), ("fanout:1", .fanOut(depth: 1)), ("FANOUT:3", .fanOut(depth: 3)),
    ])
    func layoutParsing(_ text: String, _ expected: StorageLayout) throws {
        #expect(try StorageLayout(parsing: text) == expected)
    }

    @Test("Unknown layouts are invalid configuration", arguments: ["tree", "fanout:0", "fanout:5", "fanout:x", ""])
    func badLayouts(_ text: String) {
        let error = #expect(throws: BuckiaError.self) { try StorageLayout(parsing: text) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("A fan-out folder is depth pairs of hex digits from the name's SHA-256", arguments: [1, 2, 4])
    func fanOutShape(_ depth: Int) {
        let folder = StorageLayout.fanOut(depth: depth).folder(for: "abc")
        let digest = Hashing.sha256Hex(Data("abc".utf8))
        let expected = (0..<depth).map { digest.dropFirst($0 * 2).prefix(2) + "/" }.joined()
        #expect(folder == expected)
        #expect(StorageLayout.flat.folder(for: "abc") == "")
    }

    @Test("Cache keys are checked for emptiness, NUL and length", arguments: [
        ("", false), ("a", true), ("nul\u{0}", false), (String(repeating: "k", count: CacheKey.maximumUTF8Length), true),
        (String(repeating: "k", count: CacheKey.maximumUTF8Length + 1), false),
    ])
    func cacheKeyValidation(_ value: String, _ valid: Bool) {
        let key = CacheKey(verbatim: value)
        if valid {
            #expect(throws: Never.self) { try key.validate() }
        } else {
            let error = #expect(throws: BuckiaError.self) { try key.validate() }
            #expect(error?.code == .invalidPath)
        }
    }

    @Test("Hashed cache keys are the SHA-256 of their input; verbatim keys are kept")
    func cacheKeys() {
        #expect(CacheKey("abc").value == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(CacheKey(verbatim: "abc").value == "abc")
    }

    @Test("Default directories are absolute and end with the appended path")
    func directories() {
        for directory in [
            StorageDirectory.applicationSupport(appendingPath: "Animals"), .caches(appendingPath: "Animals"),
            .documents(appendingPath: "Animals"), .temporary(appendingPath: "Animals"),
            .defaultStorageDirectory(appendingPath: "Animals"), .sharedContainer(forAppGroupIdentifier: "group.x", appendingPath: "Animals"),
        ] {
            #expect(directory.url.path.hasPrefix("/"))
            #expect(directory.url.lastPathComponent == "Animals")
        }
    }
}
