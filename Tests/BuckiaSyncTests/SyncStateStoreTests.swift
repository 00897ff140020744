import BuckiaCore
import BuckiaMemory
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

    @Test("A damaged store is moved aside and started afresh, never an error")
    func damaged() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("pair.sqlite")
        try Data(repeating: 0x5A, count: 8192).write(to: url)
        do {
            let store = try SyncStateStore(url: url)
            #expect(store.wasReset != nil)
            #expect(try store.baseline().isEmpty)
            try store.apply([(try ObjectKey("y"), Self.entry)])
        }
        let aside = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("pair.sqlite.corrupt-") }
        #expect(aside.count == 1, "the damaged file is kept aside for inspection")
        #expect(try SyncStateStore(url: url).baseline() == [try ObjectKey("y"): Self.entry])
    }

    @Test("Baselines are read a page at a time in key order; a row whose path reads back as other bytes ends the paging instead of repeating it")
    func paging() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("pair.sqlite")
        let names = ["a", "b/c", "b/d", "e", "é"]
        do {
            let store = try SyncStateStore(url: url)
            try store.apply(try names.reversed().map { (try ObjectKey($0), Self.entry) })
        }
        // Damage: a path stored as a BLOB (it sorts after every text) and one whose bytes are
        // not UTF-8 (read back repaired, so `path > ?` finds it again).
        let damage = try SQLiteConnection(path: url.path)
        try damage.execute("INSERT INTO baseline VALUES (x'7a7a', 3, NULL, NULL, '', 3, NULL, NULL, '')")
        try damage.execute("INSERT INTO baseline VALUES (CAST(x'7aff' AS TEXT), 3, NULL, NULL, '', 3, NULL, NULL, '')")
        let store = try SyncStateStore(url: url)
        var read: [String] = []
        var after: String?
        var pages = 0
        while pages < 10 {
            let (page, last) = try store.baselines(after: after, limit: 2)
            read += page.map(\.path.rawValue)
            // As the merge pages: each page must end further on, by bytes.
            guard let last, after.map({ $0.utf8.lexicographicallyPrecedes(last.utf8) }) ?? true else { break }
            after = last
            pages += 1
        }
        // The damaged rows read back repaired (`z\u{FFFD}`, `zz`): valid keys no file has,
        // which a sync forgets. Every stored path is read once, and the paging stops.
        #expect(read == ["a", "b/c", "b/d", "e", "z\u{FFFD}", "é", "zz"])
        #expect(pages < 10, "the paging stopped by itself")
        // A sync over the damaged store ends. With 1,000 more rows sorting between the BLOB's
        // read-back (`zz`) and the row after it, its pages of 1,000 would cycle between
        // `zz0999` and `zz` for ever if the merge only checked that a page ended elsewhere.
        try store.apply(try (0..<1_000).map { (try ObjectKey(String(format: "zz%04d", $0)), Self.entry) })
        let local = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        for name in names { _ = try await local.uploadData(Data("abc".utf8), remotePath: try ObjectKey(name), options: UploadOptions()) }
        let result = try await SyncEngine(
            local: try SyncEndpoint(provider: local, backend: "memory:damaged-a"),
            remote: try SyncEndpoint(provider: MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)), backend: "memory:damaged-b"),
            options: SyncOptions(mode: .push), stateStore: store
        ).run()
        #expect(result.isComplete && result.uploaded == names.count, "\(result.summary)")
    }

    @Test("Damage met after opening (a page deep in the store) resets the store then: what was read stands, the write that met it goes to the fresh store, and a sync over it completes and says so")
    func damagedDeep() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("pair.sqlite")
        let names = (0..<3_000).map { String(format: "f%04d", $0) }
        do {
            let store = try SyncStateStore(url: url)
            try store.apply(try names.map { (try ObjectKey($0), Self.entry) })
        }
        // The keys went in sorted, so the table's last page is a leaf of its last rows: damage
        // there is met only by a read that gets that far (or a write that lands there).
        let handle = try FileHandle(forUpdating: url)
        let length = try handle.seekToEnd()
        try handle.seek(toOffset: length - 4_096)
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 4_096))
        try handle.close()

        let store = try SyncStateStore(url: url)
        #expect(store.wasReset == nil, "opening reads the header and the schema, not every page")
        var read = 0
        var after: String?
        while let (page, last) = Optional(try store.baselines(after: after, limit: 1_000)), let last {
            read += page.count
            after = last
        }
        #expect(read > 0 && read < names.count, "the rows before the damaged page stand (\(read) read)")
        #expect(store.wasReset?.contains("reading baselines") == true, "\(store.wasReset ?? "not reset")")
        #expect(try store.count() == 0, "the store started afresh")
        let aside = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("pair.sqlite.corrupt-") }
        #expect(aside.count == 1, "the damaged file is kept aside: \(aside)")

        // A sync over a store whose first rows are damaged completes, records every path in
        // the fresh store, and reports the reset it met on the way.
        let second = folder.appendingPathComponent("second.sqlite")
        do {
            let store = try SyncStateStore(url: second)
            try store.apply(try names.map { (try ObjectKey($0), Self.entry) })
        }
        let bytes = try Data(contentsOf: second)
        let first = try #require(bytes.range(of: Data("f0000".utf8)), "the first row is in the file")
        let page = first.lowerBound / 4_096 * 4_096
        #expect(page > 0, "the first row is not on the header's page")
        let damage = try FileHandle(forUpdating: second)
        try damage.seek(toOffset: UInt64(page))
        try damage.write(contentsOf: Data(repeating: 0x5A, count: 4_096))
        try damage.close()
        let damaged = try SyncStateStore(url: second)
        #expect(damaged.wasReset == nil)
        let local = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        for name in names.prefix(50) { _ = try await local.uploadData(Data("abc".utf8), remotePath: try ObjectKey(name), options: UploadOptions()) }
        let result = try await SyncEngine(
            local: try SyncEndpoint(provider: local, backend: "memory:deep-a"),
            remote: try SyncEndpoint(provider: MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)), backend: "memory:deep-b"),
            options: SyncOptions(mode: .push), stateStore: damaged
        ).run()
        #expect(result.isComplete && result.uploaded == 50, "\(result.summary)")
        #expect(result.stateStoreReset != nil, "the run says the store was reset")
        #expect(try damaged.count() == 50, "each copied path was recorded in the fresh store")
    }

    @Test("A store written by a newer Buckia is refused and left as it is, not reset")
    func newer() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("pair.sqlite")
        do {
            let store = try SyncStateStore(url: url)
            try store.apply([(try ObjectKey("x"), Self.entry)])
        }
        try SQLiteConnection(path: url.path).execute("PRAGMA user_version = 99")
        let error = #expect(throws: BuckiaError.self) { try SyncStateStore(url: url) }
        #expect(error?.code == .invalidConfiguration)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains("corrupt") }.isEmpty)
        #expect(try SQLiteConnection(path: url.path).query("SELECT count(*) FROM baseline") { $0.int64(0) } == [1])
    }

    @Test("A store that cannot be opened lets go of the pair: opening it again fails for the same reason, not as a sync running")
    func refusedOpenLetsGo() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("pair.sqlite")
        try SQLiteConnection(path: url.path).execute("PRAGMA user_version = 99")
        for attempt in 1...2 {
            let error = #expect(throws: BuckiaError.self) { try SyncStateStore(url: url) }
            #expect(error?.code == .invalidConfiguration, "attempt \(attempt): \(error?.message ?? "")")
        }
    }

    @Test("One process at a time holds a pair's store; a read-only open (a dry run) writes nothing")
    func exclusive() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("pair.sqlite")
        let missing = try SyncStateStore(url: url, readOnly: true)
        #expect(try missing.baseline().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: url.path), "a read-only open created the store")
        let first = try SyncStateStore(url: url)
        try first.apply([(try ObjectKey("x"), Self.entry)])
        let error = #expect(throws: BuckiaError.self) { try SyncStateStore(url: url) }
        #expect(error?.code == .transient)
        #expect(try SyncStateStore(url: url, readOnly: true).count() == 1, "a dry run reads while a sync holds the store")
        _ = first
    }

    @Test("Either side's recorded checksum is both sides': they held the same bytes")
    func checksumsShared() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try SyncStateStore(url: folder.appendingPathComponent("pair.sqlite"))
        let entry = SyncBaseline(local: SyncEntry(size: 3, etag: "l"), remote: SyncEntry(size: 3, checksums: [.md5: "aa"], etag: "r"))
        try store.apply([(try ObjectKey("x"), entry)])
        #expect(try store.baseline()[try ObjectKey("x")]?.local.checksums == [.md5: "aa"])
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
