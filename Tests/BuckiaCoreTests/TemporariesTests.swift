import BuckiaCore
import Foundation
import Testing

@Suite("Temporaries: named, locked while written, swept once abandoned")
struct TemporariesTests {
    func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sweep-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func make(_ folder: URL, _ name: String, modified: Date, bytes: String = "x") throws {
        let url = folder.appendingPathComponent(name)
        try Data(bytes.utf8).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: url.path)
    }

    @Test("A sweep removes every unlocked temporary but one being created (empty, young, marked): not locked ones, or other files")
    func sweep() throws {
        let url = try folder()
        defer { try? FileManager.default.removeItem(at: url) }
        // A file being created (empty, its times those of its creation, not locked yet): the
        // sweep's clock is set a second after its birth, so it is young.
        let creating = url.appendingPathComponent(".buckia-being-created.tmp")
        #expect(FileManager.default.createFile(atPath: creating.path, contents: nil, attributes: [.posixPermissions: 0o1644]))
        let born = try #require(try FileManager.default.attributesOfItem(atPath: creating.path)[.modificationDate] as? Date)
        let now = born.addingTimeInterval(1)
        let old = now.addingTimeInterval(-Temporaries.sweepAge - 1)
        try make(url, ".buckia-abandoned.tmp", modified: old)
        try make(url, ".buckia-killed-just-now.tmp", modified: now.addingTimeInterval(-1))
        try make(url, ".buckia-old-empty.tmp", modified: old, bytes: "")
        // Regression (kill harness): an empty file killed after its writer dated it and before
        // the rename is young, but its time was set, so it is abandoned.
        try make(url, ".buckia-killed-after-dating.tmp", modified: now.addingTimeInterval(-30), bytes: "")
        // Regression (kill harness, kv put on the disk engine): a writer killed as its first
        // write began leaves an empty file the kernel dated now (times set before the bytes),
        // unlocked and without the creating mark: abandoned, however young.
        let firstWrite = url.appendingPathComponent(".buckia-killed-at-first-write.tmp")
        #expect(FileManager.default.createFile(atPath: firstWrite.path, contents: nil))
        try make(url, "user-file.tmp", modified: old)
        try make(url, ".buckia-config", modified: old)
        let handle = try DirectoryHandle(path: url.path)
        let (liveName, live) = try handle.createTemporaryFile()
        defer { try? live.close() }
        try live.write(Data("in progress".utf8))
        try live.setModificationDate(old)
        #expect(Temporaries.sweep(handle, now: now) == 5)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: url.path))
        #expect(left == [".buckia-being-created.tmp", "user-file.tmp", ".buckia-config", liveName])
        // Once old, even a marked empty file is abandoned.
        #expect(Temporaries.sweep(handle, now: now.addingTimeInterval(Temporaries.sweepAge + 2)) == 1)
    }

    @Test("A temporary being created whose creator has exited is taken at once; one whose creator runs is spared while young")
    func creatorGone() throws {
        let url = try folder()
        defer { try? FileManager.default.removeItem(at: url) }
        // Regression (the portable build's kill harness, where no O_TMPFILE exists): a writer
        // killed between its O_EXCL create and its lock left an empty, marked, young file that
        // the rerun's sweep spared, so the rerun ended with it still there.
        let exited = Process()
        exited.executableURL = URL(fileURLWithPath: "/bin/sh")
        exited.arguments = ["-c", "exit 0"]
        try exited.run()
        exited.waitUntilExit()
        let names = [
            "killed": ".buckia-0123456789abcdef-\(exited.processIdentifier)-1.tmp",
            "running": Temporaries.makeName(),
            "no id": ".buckia-0123456789abcdef-2.tmp",
        ]
        for name in names.values {
            #expect(FileManager.default.createFile(atPath: url.appendingPathComponent(name).path, contents: nil, attributes: [.posixPermissions: 0o1644]))
        }
        try FileManager.default.createDirectory(at: url.appendingPathComponent(".buckia-0123456789abcdef-\(exited.processIdentifier)-2.tmp"), withIntermediateDirectories: false, attributes: [.posixPermissions: 0o1700])
        #expect(Temporaries.sweep(try DirectoryHandle(path: url.path)) == 2)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: url.path))
        #expect(left == [names["running"], names["no id"]])
    }

    @Test("The creator's process id is read from a temporary's name only where it stands", arguments: [
        (".buckia-0123456789abcdef-4242-7.tmp", 4242 as Int32?), (".buckia-0123456789abcdef-7.tmp", nil), (".buckia-a-0-7.tmp", nil),
        (".buckia-a--7-7.tmp", nil), (".buckia-a-99999999999-7.tmp", nil), ("buckia-a-42-7.tmp", nil), (".buckia-a-42-7.tmpx", nil),
        (".buckia-a-42-7-8.tmp", nil),
    ])
    func creatorID(_ name: String, _ expected: Int32?) {
        #expect(Temporaries.creator(ofTemporary: name) == expected)
    }

    @Test("A sweep removes temporary folders nobody holds (a killed relay's, a young empty one without the mark), not a live one, one being made or a user's")
    func sweepFolders() async throws {
        let url = try folder()
        defer { try? FileManager.default.removeItem(at: url) }
        let now = Date()
        // What a killed remote-to-remote copy leaves: its private folder with the download.
        let abandoned = url.appendingPathComponent(".buckia-killed-relay.tmp")
        try FileManager.default.createDirectory(at: abandoned.appendingPathComponent("deep"), withIntermediateDirectories: true)
        try Data("half a file".utf8).write(to: abandoned.appendingPathComponent("file"))
        try Data("x".utf8).write(to: abandoned.appendingPathComponent("deep/part"))
        // Being made: empty, young, marked. Regression (resource cache kill harness): a process
        // killed before its download folder held anything left it empty, young and unmarked.
        try FileManager.default.createDirectory(at: url.appendingPathComponent(".buckia-just-made.tmp"), withIntermediateDirectories: false, attributes: [.posixPermissions: 0o1700])
        try FileManager.default.createDirectory(at: url.appendingPathComponent(".buckia-killed-empty.tmp"), withIntermediateDirectories: false)
        try FileManager.default.createDirectory(at: url.appendingPathComponent("user-folder.tmp"), withIntermediateDirectories: false)
        try Data("x".utf8).write(to: url.appendingPathComponent("user-folder.tmp/file"))
        var liveURL: URL?
        try await TemporaryFile.with { file in
            try Data("in flight".utf8).write(to: file)
            liveURL = file.deletingLastPathComponent()
            // The live relay is in the system's temporary folder; sweep that folder's copy of
            // our test layout here, then check the live one survives a sweep of its own folder.
            #expect(Temporaries.sweep(try DirectoryHandle(path: url.path), now: now) == 2)
            #expect(Temporaries.sweep(try DirectoryHandle(path: file.deletingLastPathComponent().deletingLastPathComponent().path), now: now) >= 0)
            #expect(FileManager.default.fileExists(atPath: file.path), "a sweep removed a relay folder still in use")
        }
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: url.path))
        #expect(left == [".buckia-just-made.tmp", "user-folder.tmp"])
        #expect(liveURL.map { !FileManager.default.fileExists(atPath: $0.path) } == true, "the relay folder outlived its copy")
    }

    @Test("A temporary is locked from the moment it has a name, whichever way it was created")
    func lockedAtBirth() throws {
        let url = try folder()
        defer { try? FileManager.default.removeItem(at: url) }
        let handle = try DirectoryHandle(path: url.path)
        let (name, file) = try handle.createTemporaryFile()
        let atomic = url.appendingPathComponent("atomic.txt")
        var lockedDuringWrite = false
        try AtomicFile.write(to: atomic, options: AtomicFile.Options()) { output in
            try output.write(Data("x".utf8))
            let names = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0 != name && $0.hasPrefix(".buckia-") }
            lockedDuringWrite = names.count == 1 && Self.isLocked(url.appendingPathComponent(names[0]))
        }
        #expect(Self.isLocked(url.appendingPathComponent(name)))
        #expect(lockedDuringWrite)
        try file.close()
        #expect(!Self.isLocked(url.appendingPathComponent(name)))
    }

    /// Whether another open file description is refused the file's lock.
    static func isLocked(_ url: URL) -> Bool {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK
    }

    @Test("An interrupted process's temporaries are removed by removeAll, and written files are not")
    func removeAll() throws {
        let url = try folder()
        defer { try? FileManager.default.removeItem(at: url) }
        let handle = try DirectoryHandle(path: url.path)
        let (name, file) = try handle.createTemporaryFile()
        defer { try? file.close() }
        try AtomicFile.write(Data("kept".utf8), to: url.appendingPathComponent("done.txt"))
        // Only this test's folder: other suites' temporaries are in flight in this process.
        Temporaries.removeAll { $0.hasPrefix(url.path + "/") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.path) == ["done.txt"], "\(name) should be gone")
    }

    @Test("Temporary names are recognised by bytes", arguments: [
        (".buckia-0F3A.tmp", true), (".buckia-.tmp", false), ("buckia-x.tmp", false), (".buckia-x.tmpx", false), (".buckia-x", false),
        (".buckia-x.tmp", true), (".buckia-xyz.tm", false), (".buckia_xyz.tmp", false), (".env", false), ("a-long-name.tmp", false),
    ])
    func names(_ name: String, _ expected: Bool) {
        #expect(Temporaries.isTemporaryName(Array(name.utf8)) == expected)
    }
}
