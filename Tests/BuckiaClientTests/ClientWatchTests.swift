import Buckia
import BuckiaClient
import BuckiaTestSupport
import Foundation
import Testing

/// `BuckiaClient.watch`: the library side of `buckia sync --watch` (the command's bursts, held
/// back files and restarts are in SyncWatchTests).
@Suite("BuckiaClient.watch")
struct ClientWatchTests {
    /// Polls `condition` every 50 ms, at most 600 times (30 s); true once it holds.
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<600 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    @Test("A watch carries the folder across, then each new file, reports each pass, and ends when cancelled")
    func watch() async throws {
        let (configuration, bucket) = try BuckiaClientTests.local()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-client-watch-\(UUID().uuidString)")
        defer { for url in [bucket, folder] { try? FileManager.default.removeItem(at: url) } }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("a".utf8).write(to: folder.appendingPathComponent("a.txt"))
        let client = try await BuckiaClient(configuration: configuration, registry: .builtIn, environment: TestHome.processEnvironment)
        let passes = Locked(0)
        let watching = Task {
            try await client.watch(
                options: SyncOptions(localPath: folder, remotePath: "mirror"), watch: SyncWatchOptions(debounce: .milliseconds(100), pollInterval: .seconds(3600))
            ) { pass in
                if case .success = pass { passes.withLock { $0 += 1 } }
            }
        }
        let mirror = bucket.appendingPathComponent("mirror")
        #expect(try await Self.eventually { FileManager.default.fileExists(atPath: mirror.appendingPathComponent("a.txt").path) })
        try Data("b".utf8).write(to: folder.appendingPathComponent("b.txt"))
        #expect(try await Self.eventually { FileManager.default.fileExists(atPath: mirror.appendingPathComponent("b.txt").path) })
        // The file is there before its pass returns: wait for the report too.
        #expect(try await Self.eventually { passes.withLock { $0 } >= 2 })
        watching.cancel()
        await #expect(throws: (any Error).self) { try await watching.value }
        await #expect(throws: BuckiaError.self) { try await client.watch(options: SyncOptions()) }
    }
}
