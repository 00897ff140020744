import BuckiaCore
import BuckiaProviderKit
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The second hardening round's library-level guards: numbers from outside converted without
/// traps, server text escaped, listings that never end or walk in circles refused, sizes no
/// object can have refused, special files never replaced, FIFOs never waited on.
@Suite("Hostile input: numbers, text, listings, special files")
struct HostileInputTests {
    @Test("Outside doubles become Int64 without a trap", arguments: [
        (9.3e18, Int64.max), (Double(Int64.max), Int64.max), (-9.3e18, Int64.min), (Double(Int64.min), Int64.min),
        (Double.infinity, Int64.max), (-Double.infinity, Int64.min), (Double.nan, 0), (1.9, 1), (-1.9, -1), (0, 0),
        (9_007_199_254_740_992, 9_007_199_254_740_992),
    ] as [(Double, Int64)])
    func saturatingConversion(_ value: Double, _ expected: Int64) {
        #expect(Int64(saturating: value) == expected)
    }

    @Test("Sums of outside sizes stop at the bounds", arguments: [
        (Int64.max, 1, Int64.max), (Int64.max - 1, 1, Int64.max), (Int64.min, -1, Int64.min), (40, 2, 42), (-5, 3, -2),
    ] as [(Int64, Int64, Int64)])
    func saturatingSum(_ a: Int64, _ b: Int64, _ expected: Int64) {
        #expect(a.addingSaturated(b) == expected)
    }

    @Test("Control characters in outside text are escaped, the rest kept", arguments: [
        ("plain text", "plain text"),
        ("red \u{1B}[31mRED", "red \\e[31mRED"),
        ("title \u{1B}]0;owned\u{07}", "title \\e]0;owned\\x07"),
        ("over\rwrite", "over\\rwrite"),
        ("two\nlines\tand tab", "two\\nlines\\tand tab"),
        ("C1 \u{9B}31m", "C1 \\x9B31m"),
        ("delete \u{7F}", "delete \\x7F"),
        ("back\\slash stays", "back\\slash stays"),
        ("accents é 名前 stay", "accents é 名前 stay"),
        ("u1\u{202E}txt.exe", "u1\\u{202E}txt.exe"),
        ("\u{2066}isolate\u{2069} \u{200F}mark \u{061C}", "\\u{2066}isolate\\u{2069} \\u{200F}mark \\u{61C}"),
    ])
    func escaping(_ text: String, _ expected: String) {
        #expect(text.escapingControlCharacters == expected)
        #expect(!expected.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
    }

    // MARK: Listings

    @Test("A token-paged listing of empty pages with fresh tokens ends in an error, after a bound")
    func endlessEmptyPages() async throws {
        let fetches = Locked(0)
        let lister = try TokenPagedLister(request: ListRequest(options: ListOptions())) { _ in
            let count = fetches.withLock { $0 += 1; return $0 }
            return ([], "token-\(count)")
        }
        await #expect { while try await lister.nextPage() != nil {} } throws: { error in
            (error as? BuckiaError)?.code == .corrupt && (error as? BuckiaError)?.message.contains("nothing new") == true
        }
        #expect(fetches.withLock { $0 } == TokenPagedLister.maximumStalledPages)
    }

    @Test("A token-paged listing that repeats the same entry under fresh tokens ends in an error")
    func endlessRepeatedEntry() async throws {
        let fetches = Locked(0)
        let lister = try TokenPagedLister(request: ListRequest(options: ListOptions())) { _ in
            let count = fetches.withLock { $0 += 1; return $0 }
            return ([.object(RemoteFile(path: try ObjectKey("a.txt"), size: 1))], "token-\(count)")
        }
        await #expect(throws: BuckiaError.self) { while try await lister.nextPage() != nil {} }
        #expect(fetches.withLock { $0 } == TokenPagedLister.maximumStalledPages + 1)
    }

    @Test("Empty pages now and then do not stop a listing that goes on making progress")
    func occasionalEmptyPages() async throws {
        let fetches = Locked(0)
        let lister = try TokenPagedLister(request: ListRequest(options: ListOptions())) { _ in
            let count = fetches.withLock { $0 += 1; return $0 }
            guard count < 400 else { return ([], nil) }
            // Every tenth page holds a new key; the nine between are empty.
            let entries: [ListEntry] = count % 10 == 0 ? [.object(RemoteFile(path: try ObjectKey(String(format: "k%05d", count)), size: 1))] : []
            return (entries, "token-\(count)")
        }
        var keys = 0
        while let page = try await lister.nextPage() { keys += page.entries.count }
        #expect(keys == 39)
    }

    /// A folder walk over a server that lists, in every folder, names that lead back into it.
    func circularWalker(_ items: @escaping @Sendable () -> [FolderItem], reads: Locked<Int>) throws -> FolderWalkLister {
        try FolderWalkLister(
            request: ListRequest(options: ListOptions()), maxPageSize: 1000,
            readFolder: { _ in
                reads.withLock { $0 += 1 }
                return items()
            },
            describe: { key in RemoteFile(path: key, size: 1) })
    }

    @Test("A folder named '.', '..', '' or 'a/b' is listed as unaddressable, never walked into", arguments: [".", "..", "", "a/b", "nul\u{0}"])
    func circularNames(_ name: String) async throws {
        let reads = Locked(0)
        let lister = try circularWalker({ [FolderItem(name, kind: .folder), FolderItem("ok.txt", kind: .file(nil))] }, reads: reads)
        var entries: [ListEntry] = []
        while let page = try await lister.nextPage() { entries += page.entries }
        #expect(reads.withLock { $0 } == 1, "the walk read the root once and nothing else")
        #expect(entries.compactMap(\.file).map(\.path.rawValue) == ["ok.txt"])
        #expect(entries.compactMap(\.unaddressable).count == 1)
    }

    @Test("A folder nested without end is cut off at the path bound")
    func endlessNesting() async throws {
        let reads = Locked(0)
        let lister = try circularWalker({ [FolderItem("deeper", kind: .folder)] }, reads: reads)
        var unaddressable = 0
        while let page = try await lister.nextPage() { unaddressable += page.entries.compactMap(\.unaddressable).count }
        #expect(unaddressable == 1)
        #expect(reads.withLock { $0 } <= FolderWalkLister.maximumFolderPathBytes / "deeper/".utf8.count + 1)
    }

    @Test("Sizes outside 0…maximum are refused", arguments: [
        (Int64(-1), false), (Int64.min, false), (Int64.max, false), (ProviderCapabilities.defaultMaximumObjectSize + 1, false),
        (Int64(0), true), (Int64(5), true), (ProviderCapabilities.defaultMaximumObjectSize, true),
    ])
    func sizes(_ size: Int64, _ accepted: Bool) throws {
        let capabilities = ProviderCapabilities(features: [])
        let file = RemoteFile(path: try ObjectKey("x"), size: size)
        if accepted {
            try capabilities.checkSize(of: file, operation: "test")
        } else {
            #expect { try capabilities.checkSize(of: file, operation: "test") } throws: { ($0 as? BuckiaError)?.code == .corrupt }
        }
    }

    // MARK: Special files

    func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("A FIFO is never replaced by an atomic write, and a regular file, a link or nothing is")
    func replaceable() throws {
        let folder = try scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("pipe")
        #expect(mkfifo(fifo.path, 0o644) == 0)
        #expect { try AtomicFile.write(Data("x".utf8), to: fifo) } throws: { ($0 as? BuckiaError)?.code == .invalidPath }
        var info = stat()
        #expect(lstat(fifo.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO, "the FIFO is still a FIFO")
        let file = folder.appendingPathComponent("file")
        try AtomicFile.write(Data("old".utf8), to: file)
        try AtomicFile.write(Data("new".utf8), to: file)
        #expect(try Data(contentsOf: file) == Data("new".utf8))
        let link = folder.appendingPathComponent("link")
        #expect(symlink(fifo.path, link.path) == 0)
        try LocalFile.checkReplaceable(link.path)
        try LocalFile.checkReplaceable(folder.appendingPathComponent("missing").path)
    }

    @Test("Opening a FIFO to read is refused at once (no writer is waited for)")
    func fifoRead() throws {
        let folder = try scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("pipe")
        #expect(mkfifo(fifo.path, 0o644) == 0)
        #expect { try LocalFile.openForReading(fifo) } throws: { ($0 as? BuckiaError)?.code == .invalidPath }
        #expect { try FileReader(fifo) } throws: { ($0 as? BuckiaError)?.code == .invalidPath }
        #expect { try LocalFile.openForReading(folder) } throws: { ($0 as? BuckiaError)?.code == .invalidPath }
    }

    @Test("The same file is recognised by path, hard link and symbolic link")
    func sameFile() throws {
        let folder = try scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("f")
        try Data("x".utf8).write(to: file)
        #expect(link(file.path, folder.appendingPathComponent("hard").path) == 0)
        #expect(symlink(file.path, folder.appendingPathComponent("soft").path) == 0)
        try Data("x".utf8).write(to: folder.appendingPathComponent("other"))
        #expect(LocalFile.isSameFile(file, folder.appendingPathComponent("./f")))
        #expect(LocalFile.isSameFile(file, folder.appendingPathComponent("hard")))
        #expect(LocalFile.isSameFile(file, folder.appendingPathComponent("soft")))
        #expect(!LocalFile.isSameFile(file, folder.appendingPathComponent("other")))
        #expect(!LocalFile.isSameFile(file, folder.appendingPathComponent("missing")))
    }

    // MARK: Configuration

    @Test("Malformed configurations get a sentence that says what is wrong", arguments: [
        (#"{"provider": "memory",}"#, "trailing comma"),
        (#"{"provider": "memory", "includePatterns": ["*",]}"#, "trailing comma"),
        (String(repeating: "[", count: 100_000), "nesting deeper"),
        (String(repeating: #"{"a":"#, count: 100_000), "nesting deeper"),
        (#"{"provider": "memory", "maxConcurrentOperations": 1.5}"#, "whole number"),
        (#"{"provider": "memory", "options": []}"#, "should be an object"),
        (#"{"provider": "memory", "options": {"a": 1}}"#, "should be a string"),
        (#"{"provider": "memory" /* comment */}"#, "not valid JSON"),
    ])
    func configurationMessages(_ json: String, _ phrase: String) {
        #expect {
            try BuckiaConfiguration.decode(from: Data(json.utf8))
        } throws: { error in
            guard let error = error as? BuckiaError, error.code == .invalidConfiguration else { return false }
            return error.message.contains(phrase) && !error.message.contains("Dictionary<") && !error.message.contains("Array<")
        }
    }
}
