import BuckiaB2
import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// A renamed folder pushed to B2 costs a `b2_copy_file` per file, counted by the emulator: no
/// `b2_upload_file` and no part sent again.
@Suite("Renamed folders reach B2 as server-side copies")
struct B2RenameSyncTests {
    @Test("1,000 files renamed with their folder: 1,000 b2_copy_file calls and no upload")
    func renamedFolder() async throws {
        // An emulator of its own: the shared one's counters move with every other test.
        let emulator = try await B2Emulator.start(buckets: ["buckia-private"], minimumPartSize: 65_536)
        defer { emulator.stop() }
        let provider = try B2Provider(settings: B2Settings.resolve(emulator.configuration(bucket: "buckia-private"), environment: [:]))
        let prefix = "renamed-\(UUID().uuidString.lowercased())"
        let before = Locked<B2Emulator.Stats?>(nil)
        let run = try await RenamedFolderRun.run(to: provider, prefix: prefix, count: 1_000) {
            let stats = try await emulator.stats()
            before.withLock { $0 = stats }
        }
        let after = try await emulator.stats()
        let first = try #require(before.withLock { $0 })
        #expect(run.result.isComplete, "\(run.result.failures.prefix(3))")
        #expect(run.result.movedRemote == 1_000 && run.result.uploaded == 0, "moved \(run.result.movedRemote), uploaded \(run.result.uploaded)")
        #expect(after.count("b2_copy_file") - first.count("b2_copy_file") == 1_000)
        #expect(after.count("b2_upload_file") == first.count("b2_upload_file"), "files uploaded again")
        #expect(after.count("b2_upload_part") == first.count("b2_upload_part"), "parts uploaded again")
        #expect(run.keys == Set(run.files.keys))
        #expect(try await provider.readData(remotePath: ObjectKey(prefix + "/photos/2026/0500.bin"), options: ReadOptions()) == run.files["photos/2026/0500.bin"])
    }
}
