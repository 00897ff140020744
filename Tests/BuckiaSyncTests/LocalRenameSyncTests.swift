import BuckiaCore
import BuckiaLocal
import BuckiaTestSupport
import Foundation
import Testing

/// A renamed folder pushed to a local folder is renamed there: each destination file is the
/// same inode as before, so not one was written again.
@Suite("Renamed folders reach a local folder as renames")
struct LocalRenameSyncTests {
    @Test("1,000 files renamed with their folder: 1,000 moves, every destination file the inode it was")
    func renamedFolder() async throws {
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-renamed-destination-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: destination) }
        let inodes = Locked<[String: UInt64]>([:])
        let run = try await RenamedFolderRun.run(to: try LocalProvider(root: destination), prefix: "tree", count: 1_000) {
            var found: [String: UInt64] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: destination.path + "/tree/album") {
                found["photos/2026/" + name] = try Self.inode(destination.path + "/tree/album/" + name)
            }
            inodes.withLock { $0 = found }
        }
        #expect(run.result.isComplete && run.result.movedRemote == 1_000 && run.result.uploaded == 0, "moved \(run.result.movedRemote), uploaded \(run.result.uploaded)")
        #expect(run.keys == Set(run.files.keys))
        let before = inodes.withLock { $0 }
        #expect(before.count == 1_000)
        var rewritten = 0
        for (path, inode) in before where try Self.inode(destination.path + "/tree/" + path) != inode { rewritten += 1 }
        #expect(rewritten == 0, "\(rewritten) files were written again instead of moved")
        #expect(try Data(contentsOf: destination.appendingPathComponent("tree/photos/2026/0042.bin")) == run.files["photos/2026/0042.bin"])
    }

    static func inode(_ path: String) throws -> UInt64 {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw BuckiaError.posix(errno, operation: "lstat", path: path) }
        return UInt64(info.st_ino)
    }
}
