import BuckiaCore
@testable import BuckiaLocal
import BuckiaProviderKit
import Foundation
import Testing

/// A fresh root (and a sibling "outside" folder) per test, removed afterwards.
struct LocalFixture: ~Copyable {
    let base: URL
    let root: URL
    let outside: URL
    let provider: LocalProvider

    init() throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-localtests-\(UUID().uuidString)")
        root = base.appendingPathComponent("root")
        outside = base.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        provider = try LocalProvider(root: root)
    }

    deinit { try? FileManager.default.removeItem(at: base) }
}

@Suite("Local provider")
struct LocalProviderTests {
    @Test("A symbolic link to a file outside the root is refused for reads")
    func symlinkFileEscape() async throws {
        let fixture = try LocalFixture()
        try Data("secret".utf8).write(to: fixture.outside.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(
            atPath: fixture.root.appendingPathComponent("link.txt").path,
            withDestinationPath: fixture.outside.appendingPathComponent("secret.txt").path)
        let error = await #expect(throws: BuckiaError.self) { try await fixture.provider.readData(remotePath: "link.txt") }
        #expect(error?.code == .invalidPath)
        #expect(try await fixture.provider.listFiles().isEmpty, "escaping links are not listed")
    }

    @Test("A symbolic link to a folder outside the root is refused for writes, and nothing lands outside")
    func symlinkFolderEscape() async throws {
        let fixture = try LocalFixture()
        try FileManager.default.createSymbolicLink(
            atPath: fixture.root.appendingPathComponent("out").path, withDestinationPath: fixture.outside.path)
        let error = await #expect(throws: BuckiaError.self) {
            try await fixture.provider.uploadData(Data("x".utf8), remotePath: "out/planted.txt")
        }
        #expect(error?.code == .invalidPath)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.outside.path).isEmpty)
        let deleteError = await #expect(throws: BuckiaError.self) { try await fixture.provider.deleteFile(remotePath: "out/planted.txt") }
        #expect(deleteError?.code == .invalidPath)
    }

    /// Folders are opened in one `openat2` that refuses a link anywhere on the way (or walked
    /// one at a time where the kernel has none): a link at any depth is refused for reads,
    /// writes and stats alike, and nothing lands outside.
    @Test("A link to a folder outside, at any depth of a key, is refused", arguments: ["out", "a/out", "a/b/out"])
    func folderLinkAtDepth(_ link: String) async throws {
        let fixture = try LocalFixture()
        #expect(DirectoryHandle.canOpenWithoutLinks, "Linux 5.6 and later open a path without links in one call")
        try Data("secret".utf8).write(to: fixture.outside.appendingPathComponent("secret.txt"))
        let linkURL = fixture.root.appendingPathComponent(link)
        try FileManager.default.createDirectory(at: linkURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: linkURL.path, withDestinationPath: fixture.outside.path)
        let read = await #expect(throws: BuckiaError.self) { try await fixture.provider.readData(remotePath: try ObjectKey("\(link)/secret.txt"), range: nil) }
        #expect(read?.code == .invalidPath)
        let stat = await #expect(throws: BuckiaError.self) { try await fixture.provider.stat(remotePath: try ObjectKey("\(link)/secret.txt")) }
        #expect(stat?.code == .invalidPath)
        let write = await #expect(throws: BuckiaError.self) {
            try await fixture.provider.uploadData(Data("x".utf8), remotePath: try ObjectKey("\(link)/planted.txt"), options: UploadOptions(condition: .ifNoneMatch))
        }
        #expect(write?.code == .invalidPath)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.outside.path) == ["secret.txt"])
        // The same key with a real folder there works, through the one-call path.
        try FileManager.default.removeItem(at: linkURL)
        try await fixture.provider.uploadData(Data("in".utf8), remotePath: try ObjectKey("\(link)/planted.txt"), options: UploadOptions(condition: .ifNoneMatch))
        #expect(try await fixture.provider.readData(remotePath: try ObjectKey("\(link)/planted.txt"), range: nil) == Data("in".utf8))
    }

    @Test("Symbolic links are never followed, even to files inside the root")
    func symlinkInside() async throws {
        let fixture = try LocalFixture()
        try await fixture.provider.uploadData(Data("real".utf8), remotePath: "real.txt")
        try FileManager.default.createSymbolicLink(
            atPath: fixture.root.appendingPathComponent("alias.txt").path,
            withDestinationPath: fixture.root.appendingPathComponent("real.txt").path)
        let error = await #expect(throws: BuckiaError.self) { try await fixture.provider.readData(remotePath: "alias.txt") }
        #expect(error?.code == .invalidPath)
        #expect(try await fixture.provider.listFiles().map(\.path.rawValue) == ["real.txt"])
    }

    // Regression: the provider once checked a path with realpath and then used it, so a folder
    // swapped for a link in between sent the write outside the root.
    @Test("A folder swapped for a link during uploads never lets a write escape the root")
    func swapRace() async throws {
        let fixture = try LocalFixture()
        let folder = fixture.root.appendingPathComponent("d").path
        let stop = Locked(false)
        let finished = DispatchGroup()
        finished.enter()
        let swapper = Thread {
            defer { finished.leave() }
            var rounds = 0
            while !stop.withLock({ $0 }) && rounds < 20_000 {
                try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
                try? FileManager.default.removeItem(atPath: folder)
                try? FileManager.default.createSymbolicLink(atPath: folder, withDestinationPath: fixture.outside.path)
                try? FileManager.default.removeItem(atPath: folder)
                rounds += 1
            }
        }
        swapper.start()
        for index in 0..<300 {
            _ = try? await fixture.provider.uploadData(Data("x".utf8), remotePath: "d/file-\(index).txt")
        }
        stop.withLock { $0 = true }
        await withCheckedContinuation { done in finished.notify(queue: .global()) { done.resume() } }
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.outside.path).isEmpty)
    }

    @Test("A key that is only a folder of other keys reads as missing")
    func folderIsNotAnObject() async throws {
        let fixture = try LocalFixture()
        try await fixture.provider.uploadData(Data("x".utf8), remotePath: "k/inner.txt")
        let error = await #expect(throws: BuckiaError.self) { try await fixture.provider.readData(remotePath: "k") }
        #expect(error?.code == .notFound)
        #expect(try await fixture.provider.stat(remotePath: "k") == nil)
    }

    @Test("A failed upload creates no folders")
    func failedUploadCreatesNoFolders() async throws {
        let fixture = try LocalFixture()
        let missing = fixture.base.appendingPathComponent("does-not-exist")
        await #expect(throws: BuckiaError.self) { try await fixture.provider.uploadFile(localURL: missing, remotePath: "a/b/c/x.txt") }
        #expect(!FileManager.default.fileExists(atPath: fixture.root.appendingPathComponent("a").path))
    }

    @Test("Keys under the reserved .buckia folder are refused", arguments: [".buckia/tmp/x", ".buckia"])
    func reservedName(_ key: String) async throws {
        let fixture = try LocalFixture()
        let error = await #expect(throws: BuckiaError.self) { try await fixture.provider.uploadData(Data(), remotePath: key) }
        #expect(error?.code == .invalidPath)
    }

    @Test("A failed upload leaves the existing object and no temporary file")
    func failedUploadIsAtomic() async throws {
        let fixture = try LocalFixture()
        try await fixture.provider.uploadData(Data("original".utf8), remotePath: "doc.txt")
        let missing = fixture.base.appendingPathComponent("does-not-exist")
        let error = await #expect(throws: BuckiaError.self) {
            try await fixture.provider.uploadFile(localURL: missing, remotePath: "doc.txt")
        }
        #expect(error?.code == .notFound)
        #expect(try await fixture.provider.readData(remotePath: "doc.txt") == Data("original".utf8))
        let temporary = fixture.root.appendingPathComponent(".buckia/tmp").path
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty)
    }

    @Test("An object and a folder cannot share a name", arguments: [("a", "a/b"), ("a/b", "a")])
    func objectFolderConflict(first: String, second: String) async throws {
        let fixture = try LocalFixture()
        try await fixture.provider.uploadData(Data("1".utf8), remotePath: first)
        let error = await #expect(throws: BuckiaError.self) { try await fixture.provider.uploadData(Data("2".utf8), remotePath: second) }
        #expect(error?.code == .alreadyExists)
        #expect(try await fixture.provider.readData(remotePath: first) == Data("1".utf8))
    }

    @Test("Deleting the last object in a folder removes the empty folders, not the root")
    func deletePrunesFolders() async throws {
        let fixture = try LocalFixture()
        try await fixture.provider.uploadData(Data("x".utf8), remotePath: "a/b/c/file.txt")
        try await fixture.provider.uploadData(Data("y".utf8), remotePath: "a/keep.txt")
        try await fixture.provider.deleteFile(remotePath: "a/b/c/file.txt")
        #expect(!FileManager.default.fileExists(atPath: fixture.root.appendingPathComponent("a/b").path))
        #expect(FileManager.default.fileExists(atPath: fixture.root.appendingPathComponent("a/keep.txt").path))
        try await fixture.provider.deleteFile(remotePath: "a/keep.txt")
        #expect(FileManager.default.fileExists(atPath: fixture.root.path))
    }

    @Test("Checksums are computed on demand from the stored bytes")
    func checksumsOnDemand() async throws {
        let fixture = try LocalFixture()
        try await fixture.provider.uploadData(Data("abc".utf8), remotePath: "abc.txt")
        let key = try ObjectKey("abc.txt")
        #expect(try await fixture.provider.checksum(remotePath: key, algorithm: .sha256) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(try await fixture.provider.checksum(remotePath: key, algorithm: .md5) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(try await fixture.provider.checksum(remotePath: key, algorithm: .crc32c) == "364b3fb7")
        #expect(try await fixture.provider.checksum(remotePath: key, algorithm: "blake3") == nil)
    }

    @Test(
        "Bad configurations fail with invalidConfiguration",
        arguments: [[:], ["root": "relative/path"], ["root": "/tmp/x", "fsync": "sometimes"]]
    )
    func badConfiguration(_ options: [String: String]) throws {
        let error = #expect(throws: BuckiaError.self) {
            try LocalProvider(configuration: BuckiaConfiguration(provider: .local, options: options))
        }
        #expect(error?.code == .invalidConfiguration)
    }
}

@Suite("Local provider: names that cannot be keys")
struct LocalUnaddressableTests {
    @Test("A file name that is not UTF-8 and a symbolic link are listed as unaddressable, never skipped")
    func listsUnaddressable() async throws {
        let fixture = try LocalFixture()
        try await fixture.provider.uploadData(Data("ok".utf8), remotePath: "dir/ok.txt")
        // "bad\xFF.txt": a byte sequence no UTF-8 decoder accepts.
        let name: [UInt8] = Array("bad".utf8) + [0xFF] + Array(".txt".utf8)
        let path = fixture.root.appendingPathComponent("dir").path + "/"
        let created = (Array(path.utf8) + name + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { creat($0.baseAddress!, 0o644) }
        }
        #expect(created >= 0)
        if created >= 0 { close(created) }
        try FileManager.default.createSymbolicLink(
            atPath: fixture.root.appendingPathComponent("dir/link").path, withDestinationPath: fixture.outside.path)
        var files: [String] = []
        var skipped: [UnaddressableKey] = []
        for try await entry in fixture.provider.list(ListOptions(prefix: "dir/")) {
            if let file = entry.file { files.append(file.path.rawValue) }
            if let key = entry.unaddressable { skipped.append(key) }
        }
        #expect(files == ["dir/ok.txt"])
        #expect(skipped.map(\.bytes) == [Array("dir/".utf8) + name, Array("dir/link".utf8)])
        #expect(skipped.first?.displayName == "dir/bad\\xFF.txt")
        #expect(skipped.first?.reason.contains("UTF-8") == true)
        #expect(skipped.last?.reason.contains("symbolic link") == true)
    }

    @Test("Each folder is read once per listing, however many pages it fills")
    func readsFolderOnce() async throws {
        let fixture = try LocalFixture()
        for index in 0..<25 { try await fixture.provider.uploadData(Data(), remotePath: "flat/\(index).txt") }
        let reads = Locked<[String: Int]>([:])
        let provider = fixture.provider
        let lister = try FolderWalkLister(
            request: ListRequest(options: ListOptions(pageSize: 4)), maxPageSize: 1000,
            readFolder: { folder in
                reads.withLock { $0[folder, default: 0] += 1 }
                return try provider.folderItems(folder)
            },
            describe: { try await provider.stat(remotePath: $0) })
        var pages = 0
        var count = 0
        while let page = try await lister.nextPage() {
            pages += 1
            count += page.entries.count
        }
        #expect(count == 25)
        #expect(pages == 7)
        #expect(reads.withLock { $0 } == ["": 1, "flat/": 1])
    }
}

@Suite("Local entity tags")
struct LocalETagTests {
    @Test(
        "An entity tag reads as the four numbers formatted apart and joined (the format stored baselines hold)",
        arguments: [
            (UInt64(0), Int64(0), Int64(0), Int64(0)),
            (UInt64(1), Int64(15), Int64(16), Int64(255)),
            (UInt64.max, Int64.max, Int64.min, Int64(1) << 40),
            (UInt64(0x1234_5678_9abc), Int64(-1), Int64(-0x10), Int64(1_048_576)),
            (UInt64(1) << 63, Int64(1_764_000_000_123_456_789), Int64(1_764_000_000_000_000_001), Int64(0xf)),
        ])
    func etagFormat(_ inode: UInt64, _ modified: Int64, _ changed: Int64, _ size: Int64) {
        let joined = "\"\(String(inode, radix: 16))-\(String(modified, radix: 16))-\(String(changed, radix: 16))-\(String(size, radix: 16))\""
        #expect(LocalProvider.etag(inode: inode, modified: modified, changed: changed, size: size) == joined)
    }
}
