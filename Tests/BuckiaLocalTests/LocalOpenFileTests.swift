import BuckiaCore
import BuckiaLocal
import Foundation
import Testing

/// The local provider's open-file path (`OpenFileStore`), which a folder-to-folder sync copies
/// through, and the folder handles a batch of writes holds (`FolderHandles`): the same answers
/// and guarantees as the URL path, with fewer lookups.
@Suite("Local provider: open files and held folders")
struct LocalOpenFileTests {
    /// A fresh root with `a/b.txt`, a link to it, a linked folder and a folder.
    private static func makeRoot() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-open-\(UUID().uuidString)")
        let fm = FileManager.default
        try fm.createDirectory(at: root.appendingPathComponent("a/folder"), withIntermediateDirectories: true)
        try Data("bytes".utf8).write(to: root.appendingPathComponent("a/b.txt"))
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("a/link.txt").path, withDestinationPath: "b.txt")
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("linked").path, withDestinationPath: "a")
        try fm.createDirectory(at: root.appendingPathComponent(".buckia"), withIntermediateDirectories: true)
        try Data("hidden".utf8).write(to: root.appendingPathComponent(".buckia/c.txt"))
        return root
    }

    @Test(
        "openForReading refuses what fileForReading refuses, with the same code",
        arguments: [
            ("a/link.txt", BuckiaError.Code.invalidPath),  // the key names a link
            ("linked/b.txt", .invalidPath),  // a link on the way
            (".buckia/c.txt", .invalidPath),  // the reserved folder
            ("a/missing.txt", .notFound),
            ("missing/b.txt", .notFound),
            ("a/folder", .notFound),  // a folder, not a file
            ("a/b.txt/x", .notFound),  // a file on the way
        ])
    func refusals(key: String, code: BuckiaError.Code) throws {
        let root = try Self.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let provider = try LocalProvider(root: root)
        let objectKey = try ObjectKey(key)
        let byURL = #expect(throws: BuckiaError.self) { try provider.fileForReading(objectKey) }
        let opened = #expect(throws: BuckiaError.self) { try provider.openForReading(objectKey) }
        #expect(byURL?.code == code)
        #expect(opened?.code == code, "\(key): \(String(describing: opened))")
    }

    @Test("openForReading opens the file and describes what it opened, as fileForReading describes it")
    func opens() throws {
        let root = try Self.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let provider = try LocalProvider(root: root)
        let key = try ObjectKey("a/b.txt")
        let (file, status, description) = try provider.openForReading(key)
        defer { file.closeAfterReading() }
        #expect(try file.read(count: 100, at: 0) == Data("bytes".utf8))
        #expect(status.st_size == 5)
        let (_, listed) = try provider.fileForReading(key)
        #expect(description.path == key)
        #expect(description.size == 5)
        #expect(description.etag == listed.etag)
    }

    @Test("A folder removed while a batch holds it is made again for the batch's next write", arguments: [true, false])
    func heldFolderRemoved(newFile: Bool) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-held-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        // Unsynced, as `default:` is: writes run on the calling task, which holds the batch. (A
        // synced write runs on the blocking-work threads and looks each folder up.)
        let provider = try LocalProvider(root: root, durable: false)
        // A new file goes through an unnamed file in the folder; a replacement through a named
        // temporary renamed into it: both must notice the folder went.
        let options = UploadOptions(condition: newFile ? .ifNoneMatch : nil)
        let held = FolderHandles()
        try await FolderHandles.$current.withValue(held) {
            try await provider.uploadData(Data("1".utf8), remotePath: "d/e/one.txt", options: options)
            #expect(held.count == 1, "the batch holds the folder it wrote into")
            try FileManager.default.removeItem(at: root.appendingPathComponent("d"))
            try await provider.uploadData(Data("2".utf8), remotePath: "d/e/two.txt", options: options)
            #expect(try Data(contentsOf: root.appendingPathComponent("d/e/two.txt")) == Data("2".utf8), "written where its key says")
            // Removed and made again by someone else: the write lands in the folder now there.
            try FileManager.default.removeItem(at: root.appendingPathComponent("d"))
            try FileManager.default.createDirectory(at: root.appendingPathComponent("d/e"), withIntermediateDirectories: true)
            try await provider.uploadData(Data("3".utf8), remotePath: "d/e/three.txt", options: options)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("d/e").path).sorted()
        #expect(names == ["three.txt"])
        #expect(try Data(contentsOf: root.appendingPathComponent("d/e/three.txt")) == Data("3".utf8))
    }

    @Test("A batch holds no more than its limit of folders, and never the root")
    func heldBounded() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-held-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let provider = try LocalProvider(root: root, durable: false)
        let held = FolderHandles()
        try await FolderHandles.$current.withValue(held) {
            try await provider.uploadData(Data("r".utf8), remotePath: "top.txt", options: UploadOptions(condition: .ifNoneMatch))
            #expect(held.count == 0, "the root's handle is locked by writers and must not be shared")
            for index in 0..<(FolderHandles.limit + 8) {
                try await provider.uploadData(Data("\(index)".utf8), remotePath: try ObjectKey("f\(index)/x.txt"), options: UploadOptions(condition: .ifNoneMatch))
                try await provider.uploadData(Data("\(index)".utf8), remotePath: try ObjectKey("f\(index)/y.txt"), options: UploadOptions(condition: .ifNoneMatch))
            }
            #expect(held.count == FolderHandles.limit)
        }
        for index in 0..<(FolderHandles.limit + 8) {
            #expect(try Data(contentsOf: root.appendingPathComponent("f\(index)/y.txt")) == Data("\(index)".utf8))
        }
    }

    @Test("A folder pruned by a delete is let go, and a later write into it makes it again")
    func prunedFolderForgotten() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-held-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let provider = try LocalProvider(root: root, durable: false)
        let held = FolderHandles()
        try await FolderHandles.$current.withValue(held) {
            try await provider.uploadData(Data("1".utf8), remotePath: "p/q/one.txt", options: UploadOptions(condition: .ifNoneMatch))
            #expect(held.count == 1)
            try await provider.deleteFile(remotePath: "p/q/one.txt")
            #expect(held.count == 0, "the delete pruned p/q and p")
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("p").path))
            try await provider.uploadData(Data("2".utf8), remotePath: "p/q/two.txt", options: UploadOptions(condition: .ifNoneMatch))
        }
        #expect(try Data(contentsOf: root.appendingPathComponent("p/q/two.txt")) == Data("2".utf8))
    }
}
