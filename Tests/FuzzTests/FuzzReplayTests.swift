import BuckiaFuzzTargets
import Foundation
import Testing

/// Every input `Tools/fuzz/fuzz` keeps — each target's seed corpus, and every input that once
/// crashed a parser (`Tests/Fuzz/<target>/crashes/`, each fixed since) — replayed through its
/// target on each test run: a crash found once stays fixed.
@Suite("Fuzz inputs replayed")
struct FuzzReplayTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    /// The files under `Tests/Fuzz/<target>/<kind>/`.
    static func inputs(_ target: FuzzTarget, _ kind: String) throws -> [URL] {
        let folder = root.appendingPathComponent(target.rawValue).appendingPathComponent(kind)
        guard FileManager.default.fileExists(atPath: folder.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil).filter { !$0.lastPathComponent.hasPrefix(".") }
    }

    @Test("Each target's seed corpus and kept crashes run through it", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        let seeds = try Self.inputs(target, "corpus")
        // A target without seeds would replay nothing and pass: every target has some.
        #expect(!seeds.isEmpty, "Tests/Fuzz/\(target.rawValue)/corpus holds no seed")
        for file in seeds + (try Self.inputs(target, "crashes")) {
            try target.run(try Data(contentsOf: file))
        }
    }

    @Test("Every folder under Tests/Fuzz names a target")
    func foldersNameTargets() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.root.path).filter { name in
            var folder: ObjCBool = false
            return !name.hasPrefix(".") && FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(name).path, isDirectory: &folder) && folder.boolValue
        }
        let unknown = names.filter { FuzzTarget(rawValue: $0) == nil }
        #expect(unknown.isEmpty, "folders that name no fuzz target: \(unknown)")
    }
}
