import BuckiaCore
import BuckiaProviderKit
import Foundation
import Testing

@Suite("Listers")
struct ListerTests {
    /// A folder tree as a listing reads it: folder prefix → names (a trailing `/` marks a folder).
    static let tree: [String: [String]] = [
        "": ["a.txt", "b/", "c/"],
        "b/": ["1", "2", "deep/"],
        "b/deep/": ["x"],
        "c/": ["only"],
    ]

    func walker(_ options: ListOptions, token: String? = nil, failing: String? = nil) throws -> FolderWalkLister {
        try FolderWalkLister(
            request: ListRequest(options: options, resumeToken: token), maxPageSize: 1000,
            readFolder: { folder in
                if folder == failing { throw BuckiaError(.permissionDenied, "cannot read \(folder)") }
                return (Self.tree[folder] ?? []).map { name in
                    name.hasSuffix("/") ? FolderItem(String(name.dropLast()), kind: .folder) : FolderItem(name, kind: .file(nil))
                }
            },
            describe: { key in RemoteFile(path: key, size: 1) })
    }

    func drain(_ lister: any ObjectLister) async throws -> [String] {
        var paths: [String] = []
        while let page = try await lister.nextPage() { paths += page.entries.map(\.path) }
        return paths
    }

    @Test("A folder walk lists recursively and one level in key order", arguments: [
        (ListOptions(), ["a.txt", "b/1", "b/2", "b/deep/x", "c/only"]),
        (ListOptions(recursive: false), ["a.txt", "b/", "c/"]),
        (ListOptions(prefix: "b/", recursive: false), ["b/1", "b/2", "b/deep/"]),
        (ListOptions(startAfter: "b/2"), ["b/deep/x", "c/only"]),
        (ListOptions(prefix: "b/d"), ["b/deep/x"]),
    ])
    func walks(_ options: ListOptions, _ expected: [String]) async throws {
        #expect(try await drain(walker(options)) == expected)
    }

    /// Names whose order depends on a folder sorting as its name followed by `/` (0x2F), on
    /// bytes past ASCII, and on one name being a prefix of another.
    /// Short names, and names whose first eight bytes are the same (the sort compares those as
    /// one number first: these are ordered by the bytes after).
    static let orderingNames = [
        "é.txt", "a/", "a-b", "a.txt", "a0", "ab", "Z", "a b", "a", "b/", "b.", "bb/", "b0",
        "longname-b", "longname", "longname/", "longname-a", "longname0", "longnamf", "longname.",
    ]

    @Test("A folder's items are walked in the byte order of the keys they hold, whatever order the folder read gave", arguments: 0..<4)
    func walkOrder(_ arrangement: Int) async throws {
        var names = Self.orderingNames
        switch arrangement {
        case 1: names.reverse()
        case 2: names = Array(names[5...] + names[..<5])
        case 3: names.sort()
        default: break
        }
        let arranged = names
        let lister = try FolderWalkLister(
            request: ListRequest(options: ListOptions()), maxPageSize: 1000,
            readFolder: { folder in
                guard folder.isEmpty else { return [FolderItem("x", kind: .file(nil))] }
                return arranged.map { $0.hasSuffix("/") ? FolderItem(String($0.dropLast()), kind: .folder) : FolderItem($0, kind: .file(nil)) }
            },
            describe: { key in RemoteFile(path: key, size: 1) })
        let keys = Self.orderingNames.map { $0.hasSuffix("/") ? $0 + "x" : $0 }
        let expected = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(try await drain(lister) == expected)
    }

    @Test("A folder that cannot be read fails the listing instead of shortening it")
    func readFailureThrows() async throws {
        let lister = try walker(ListOptions(), failing: "b/deep/")
        let error = await #expect(throws: BuckiaError.self) { try await drain(lister) }
        #expect(error?.code == .permissionDenied)
    }

    @Test("A resume token from a walk continues it; a token from elsewhere is refused")
    func resumeTokens() async throws {
        let first = try walker(ListOptions(pageSize: 2))
        let page = try #require(try await first.nextPage())
        #expect(page.entries.map(\.path) == ["a.txt", "b/1"])
        let token = try #require(page.resumeToken)
        #expect(try await drain(walker(ListOptions(pageSize: 2), token: token)) == ["b/2", "b/deep/x", "c/only"])
        let error = #expect(throws: BuckiaError.self) { try walker(ListOptions(), token: "not base64url!") }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("A snapshot lister sorts by bytes and keeps NFC and NFD apart")
    func snapshot() async throws {
        let keys = ["caf\u{E9}", "cafe\u{301}", "b", "a"]
        let entries = try keys.map { ListEntry.object(RemoteFile(path: try ObjectKey($0), size: 0)) }
        let listed = try await drain(SnapshotLister(entries: entries, request: ListRequest(options: ListOptions(pageSize: 1)), maxPageSize: 10))
        #expect(listed.map { Array($0.utf8) } == keys.sorted { $0.utf8Precedes($1) }.map { Array($0.utf8) })
    }

    @Test("A backend that repeats a continuation token is reported as corrupt, not looped on")
    func repeatedToken() async throws {
        let lister = try TokenPagedLister(request: ListRequest(options: ListOptions())) { _ in ([], "same") }
        let error = await #expect(throws: BuckiaError.self) { try await drain(lister) }
        #expect(error?.code == .corrupt)
    }

    @Test("Object keys and cache keys compare and hash by bytes")
    func byteKeys() throws {
        #expect(try ObjectKey("caf\u{E9}") != ObjectKey("cafe\u{301}"))
        #expect(Set([CacheKey(verbatim: "caf\u{E9}"), CacheKey(verbatim: "cafe\u{301}")]).count == 2)
        #expect(try ObjectKey("cafe\u{301}/x").hasPrefix("cafe"))
        #expect(try ObjectKey("cafe\u{301}/x").dropping(prefix: "cafe") == "\u{301}/x")
    }
}
