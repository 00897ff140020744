import BuckiaCore
import BuckiaLocal
import Foundation
import Testing

/// `.buckia`, where the local provider keeps temporaries and its lock file, goes when no writer
/// is using it, and stays while one is.
@Suite("Local provider: working files")
struct LocalWorkingFilesTests {
    @Test("removeWorkingFiles leaves .buckia while a write is under way and removes it after, with a killed writer's temporary")
    func removedWhenIdle() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-working-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let provider = try LocalProvider(root: root)
        let reserved = root.appendingPathComponent(".buckia")
        try await provider.uploadData(Data("a".utf8), remotePath: "a.txt")
        #expect(FileManager.default.fileExists(atPath: reserved.path), "a write made its working folder")
        // A temporary a killed process left: unlocked, so it may go.
        try Data("left".utf8).write(to: reserved.appendingPathComponent("tmp/.buckia-\(UUID().uuidString).tmp"))
        let key = try ObjectKey("b.txt")
        try await provider.receiveFile(at: key, condition: nil) { url in
            try Data("b".utf8).write(to: url)
            // Mid-write: the writer holds the root's shared lock, so nothing is removed.
            try provider.removeWorkingFiles()
            #expect(FileManager.default.fileExists(atPath: reserved.path), "removed while a write was under way")
            // The lock file too: a conditional writer that locked it must not find it replaced.
            #expect(FileManager.default.fileExists(atPath: reserved.appendingPathComponent("lock").path), "the lock file went mid-write")
        }
        try provider.removeWorkingFiles()
        #expect(!FileManager.default.fileExists(atPath: reserved.path), "left after the last write")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() == ["a.txt", "b.txt"])
        // The next write makes it again, and a removal of nothing is no error.
        try await provider.uploadData(Data("c".utf8), remotePath: "c.txt")
        try provider.removeWorkingFiles()
        try provider.removeWorkingFiles()
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() == ["a.txt", "b.txt", "c.txt"])
    }

    @Test("A folder holding something Buckia did not put there is kept")
    func foreignContentKept() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-working-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let provider = try LocalProvider(root: root)
        try await provider.uploadData(Data("a".utf8), remotePath: "a.txt")
        try Data("mine".utf8).write(to: root.appendingPathComponent(".buckia/notes"))
        try provider.removeWorkingFiles()
        #expect(try Data(contentsOf: root.appendingPathComponent(".buckia/notes")) == Data("mine".utf8))
    }
}
