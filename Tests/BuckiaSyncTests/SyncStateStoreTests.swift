import BuckiaCore
import BuckiaSQLite
import BuckiaSync
import Foundation
import Testing

/// The sync state store on the real SQLite library and filesystem.
@Suite("Sync state store")
struct SyncStateStoreTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static let entry = SyncBaseline(
        local: SyncEntry(size: 3, modified: Date(timeIntervalSince1970: 1_700_000_000.25), checksums: [.md5: "900150983cd24fb0d6963f7d28e17f72"], etag: "\"1f-abc-3\""),
        remote: SyncEntry(size: 3, modified: Date(timeIntervalSince1970: 1_700_000_000), checksums: [.md5: "900150983cd24fb0d6963f7d28e17f72"], etag: "\"1f-abc-3\""))

    @Test("Baselines survive a reopen; forgetting removes them; changes apply all together")
    func roundTrip() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("deep/pair.sqlite")
        do {
            let store = try SyncStateStore(url: url)
            #expect(store.wasReset == nil)
            try store.apply([(try ObjectKey("a/b.txt"), Self.entry), (try ObjectKey("c.txt"), Self.entry), (try ObjectKey("naïve/ü.txt"), Self.entry)])
            try store.apply([(try ObjectKey("c.txt"), nil)])
        }
        let reopened = try SyncStateStore(url: url)
        #expect(try reopened.baseline() == [try ObjectKey("a/b.txt"): Self.entry, try ObjectKey("naïve/ü.txt"): Self.entry])
        #expect(try reopened.count() == 2)
    }

    @Test("A damaged or foreign store is moved aside and started afresh, never an error", arguments: ["garbage", "future"])
    func damaged(_ kind: String) throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("pair.sqlite")
        if kind == "garbage" {
            try Data(repeating: 0x5A, count: 8192).write(to: url)
        } else {
            let store = try SyncStateStore(url: url)
            try store.apply([(try ObjectKey("x"), Self.entry)])
            // A later Buckia's store: a schema version this one does not know.
            try SQLiteConnection(path: url.path).execute("PRAGMA user_version = 99")
        }
        let store = try SyncStateStore(url: url)
        #expect(store.wasReset != nil)
        #expect(try store.baseline().isEmpty)
        let aside = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("pair.sqlite.corrupt-") }
        #expect(aside.count == 1, "the damaged file is kept aside for inspection")
        try store.apply([(try ObjectKey("y"), Self.entry)])
        #expect(try SyncStateStore(url: url).baseline() == [try ObjectKey("y"): Self.entry])
    }

    @Test("Each pair has its own store under XDG_STATE_HOME, else ~/.local/state")
    func location() {
        let one = SyncStateStore.location(source: "/home/a/photos", destination: "s3:photos", environment: ["XDG_STATE_HOME": "/state", "HOME": "/home/a"])
        let two = SyncStateStore.location(source: "/home/a/photos", destination: "s3:other", environment: ["XDG_STATE_HOME": "/state", "HOME": "/home/a"])
        #expect(one.path.hasPrefix("/state/buckia/sync/") && one.pathExtension == "sqlite")
        #expect(one != two)
        let relative = SyncStateStore.location(source: "a", destination: "b", environment: ["XDG_STATE_HOME": "relative", "HOME": "/home/a"])
        #expect(relative.path.hasPrefix("/home/a/.local/state/buckia/sync/"), "a relative XDG_STATE_HOME is ignored, as the spec says")
    }
}
