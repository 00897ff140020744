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

    func make(_ folder: URL, _ name: String, modified: Date) throws {
        let url = folder.appendingPathComponent(name)
        try Data("x".utf8).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: url.path)
    }

    @Test("A sweep removes old unlocked temporaries only: not locked ones, new ones, or other files")
    func sweep() throws {
        let url = try folder()
        defer { try? FileManager.default.removeItem(at: url) }
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        let old = now.addingTimeInterval(-Temporaries.sweepAge - 1)
        try make(url, ".buckia-abandoned.tmp", modified: old)
        try make(url, ".buckia-fresh.tmp", modified: now.addingTimeInterval(-1))
        try make(url, "user-file.tmp", modified: old)
        try make(url, ".buckia-config", modified: old)
        let handle = try DirectoryHandle(path: url.path)
        let (liveName, live) = try handle.createTemporaryFile()
        defer { try? live.close() }
        try live.setModificationDate(old)
        #expect(Temporaries.sweep(handle, now: now) == 1)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: url.path))
        #expect(left == [".buckia-fresh.tmp", "user-file.tmp", ".buckia-config", liveName])
    }

    @Test("An interrupted process's temporaries are removed by removeAll, and written files are not")
    func removeAll() throws {
        let url = try folder()
        defer { try? FileManager.default.removeItem(at: url) }
        let handle = try DirectoryHandle(path: url.path)
        let (name, file) = try handle.createTemporaryFile()
        defer { try? file.close() }
        try AtomicFile.write(Data("kept".utf8), to: url.appendingPathComponent("done.txt"))
        Temporaries.removeAll()
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.path) == ["done.txt"], "\(name) should be gone")
    }

    @Test("Temporary names are recognised by bytes", arguments: [
        (".buckia-0F3A.tmp", true), (".buckia-.tmp", false), ("buckia-x.tmp", false), (".buckia-x.tmpx", false), (".buckia-x", false),
    ])
    func names(_ name: String, _ expected: Bool) {
        #expect(Temporaries.isTemporaryName(Array(name.utf8)) == expected)
    }
}
