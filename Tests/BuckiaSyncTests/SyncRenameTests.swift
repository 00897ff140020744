import BuckiaCore
@testable import BuckiaSync
import Foundation
import Testing

/// Rename pairing as a table: which new files and doomed old names pair, and which are proven
/// by checksum rather than left for the run to check.
@Suite("Sync renames")
struct SyncRenameTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static let file = SyncEntry(size: 10, modified: t0, etag: "\"v1\"")
    static let hashed = SyncEntry(size: 10, modified: t0.addingTimeInterval(5), checksums: [.md5: "aa"])

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var copies: [(String, SyncEntry)]
        var deletes: [(String, SyncEntry, (SyncEntry, SyncEntry)?)]
        /// `from>to` with `!` when proven.
        var expected: [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "same size and time, the old copy untouched", copies: [("new", file)], deletes: [("old", file, (file, file))], expected: ["old>new"]),
        Case(
            name: "a shared checksum proves it", copies: [("new", hashed)], deletes: [("old", SyncEntry(size: 10, checksums: [.md5: "aa"]), nil)],
            expected: ["old>new!"]),
        Case(
            name: "the baseline's checksum proves it", copies: [("new", hashed)], deletes: [("old", file, (SyncEntry(size: 10, modified: t0, checksums: [.md5: "aa"]), file))],
            expected: ["old>new!"]),
        Case(
            name: "a different checksum, same size", copies: [("new", hashed)], deletes: [("old", SyncEntry(size: 10, checksums: [.md5: "bb"]), nil)], expected: []),
        Case(name: "a different size", copies: [("new", SyncEntry(size: 11, modified: t0))], deletes: [("old", file, (file, file))], expected: []),
        Case(name: "a different time", copies: [("new", SyncEntry(size: 10, modified: t0.addingTimeInterval(1)))], deletes: [("old", file, (file, file))], expected: []),
        Case(
            name: "the old copy changed since the last run", copies: [("new", file)], deletes: [("old", SyncEntry(size: 10, modified: t0, etag: "\"v2\""), (file, file))],
            expected: []),
        Case(name: "no baseline and no checksum", copies: [("new", file)], deletes: [("old", file, nil)], expected: []),
        Case(name: "two new files match one old", copies: [("new1", file), ("new2", file)], deletes: [("old", file, (file, file))], expected: []),
        Case(name: "one new file matches two old", copies: [("new", file)], deletes: [("old1", file, (file, file)), ("old2", file, (file, file))], expected: []),
        Case(
            name: "two renames side by side", copies: [("b2", hashed), ("a2", file)],
            deletes: [("a1", file, (file, file)), ("b1", SyncEntry(size: 10, checksums: [.md5: "aa"]), nil)], expected: ["b1>b2!", "a1>a2"]),
        Case(name: "nothing deleted", copies: [("new", file)], deletes: [], expected: []),
    ]

    @Test("Renames pair only when one copy and one delete point at each other", arguments: cases)
    func pairing(_ table: Case) throws {
        let copies = try table.copies.map { RenameCopy(path: try ObjectKey($0.0), source: $0.1) }
        let deletes = try table.deletes.map { RenameDelete(path: try ObjectKey($0.0), doomed: $0.1, synced: $0.2.map { (source: $0.0, here: $0.1) }) }
        let found = SyncPlanner.renames(copies: copies, deletes: deletes).map { "\($0.from)>\($0.to)\($0.proven ? "!" : "")" }
        #expect(found == table.expected)
    }
}
