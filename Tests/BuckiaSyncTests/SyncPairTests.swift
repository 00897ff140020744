import BuckiaCore
import BuckiaMemory
import BuckiaSync
import Foundation
import Testing

/// Pairs a sync must refuse (one side within the other) and the locks that keep two runs from
/// writing the same place at once.
@Suite("Sync pairs: overlaps refused, one lock per pair and per side written")
struct SyncPairTests {
    static func endpoint(_ backend: String, _ path: String = "") throws -> SyncEndpoint {
        try SyncEndpoint(provider: MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)), path: path, backend: backend)
    }

    @Test("Overlap is decided by storage and folder", arguments: [
        ("local:/srv", "", "local:/srv", "a/", true),
        ("local:/srv", "a/", "local:/srv/a", "", true),
        ("local:/srv", "a/b/", "local:/srv/a", "", true),
        ("local:/srv/a", "", "local:/srv/a", "", true),
        ("local:/srv/a/", "", "local:/srv/a", "b/", true),
        ("local:/srv", "a/", "local:/srv", "ab/", false),
        ("local:/srv/a", "", "local:/srv/ab", "", false),
        ("local:/srv", "a/", "local:/srv", "b/", false),
        ("s3:bucket@https://s3.example", "", "s3:bucket@https://s3.example", "photos/", true),
        ("s3:bucket@https://s3.example", "photos/", "s3:bucket@https://s3.example", "photos/2026/", true),
        ("s3:bucket@https://s3.example", "photos/", "s3:bucket@https://s3.example", "photos2/", false),
        ("s3:bucket@https://s3.example", "", "s3:other@https://s3.example", "", false),
        ("s3:bucket@https://s3.example", "", "local:/srv", "", false),
    ])
    func overlap(_ firstBackend: String, _ firstPath: String, _ secondBackend: String, _ secondPath: String, _ expected: Bool) throws {
        let first = try Self.endpoint(firstBackend, firstPath)
        let second = try Self.endpoint(secondBackend, secondPath)
        #expect(first.overlaps(second) == expected)
        #expect(second.overlaps(first) == expected)
    }

    @Test("The engine refuses an overlapping pair before it lists or changes anything")
    func engineRefusesOverlap() async throws {
        let provider = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        _ = try await provider.uploadData(Data("a".utf8), remotePath: "d/a.txt")
        let engine = SyncEngine(
            local: try SyncEndpoint(provider: provider, path: "d/sub", backend: "memory:one"),
            remote: try SyncEndpoint(provider: provider, path: "d", backend: "memory:one"),
            options: SyncOptions(deleteExtraneous: true), stateStore: nil)
        await #expect { try await engine.run() } throws: { ($0 as? BuckiaError)?.code == .invalidConfiguration }
        #expect(try await provider.readData(remotePath: "d/a.txt") == Data("a".utf8))
    }

    /// A state folder of the test's own.
    static func environment() -> [String: String] {
        ["XDG_STATE_HOME": FileManager.default.temporaryDirectory.appendingPathComponent("buckia-locks-\(UUID().uuidString)").path]
    }

    @Test("A pair is locked in either order, a written side against every other writer, a read side against none")
    func locks() throws {
        let environment = Self.environment()
        defer { try? FileManager.default.removeItem(atPath: environment["XDG_STATE_HOME"] ?? "") }
        let (a, b, c) = (try Self.endpoint("local:/a"), try Self.endpoint("local:/b"), try Self.endpoint("local:/c"))
        func acquire(_ source: SyncEndpoint, _ destination: SyncEndpoint, _ mode: SyncMode) throws -> SyncLocks {
            try SyncLocks.acquire(
                source: source, destination: destination, writesSource: mode != .push, writesDestination: mode != .pull, environment: environment)
        }
        func refused(_ source: SyncEndpoint, _ destination: SyncEndpoint, _ mode: SyncMode) -> Bool {
            do {
                _ = try acquire(source, destination, mode)
                return false
            } catch {
                return (error as? BuckiaError)?.code == .transient
            }
        }
        let push = try acquire(a, b, .push)  // writes b
        #expect(refused(b, a, .twoWay), "the same pair the other way round")
        #expect(refused(b, a, .push), "the same pair the other way round, even a push")
        #expect(refused(c, b, .push), "another push into b")
        #expect(refused(b, c, .twoWay), "a two-way run that writes b")
        #expect(refused(c, b, .pull) == false, "a pull from b into c only reads b")
        let alongside = try acquire(a, c, .push)  // a is only read by both
        alongside.release()
        push.release()
        let twoWay = try acquire(b, a, .twoWay)
        #expect(refused(a, c, .pull), "a pull writes a, which the two-way run holds")
        twoWay.release()
        _ = try acquire(a, c, .pull)
    }
}
