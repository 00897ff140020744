import Buckia
import BuckiaClient
import BuckiaTestSupport
import BuckiaUserFolder
import Foundation
import Testing

/// The seed's per-user folder and its sync sequence, on the real file system and a local bucket.
@Suite("User folder and its sync")
struct UserFolderTests {
    /// Fresh application-support and documents folders under `parent`.
    static func bases(under parent: URL) throws -> UserFolder.Bases {
        let bases = UserFolder.Bases(
            applicationSupport: parent.appendingPathComponent("support-\(UUID().uuidString)"),
            documents: parent.appendingPathComponent("documents-\(UUID().uuidString)"))
        for folder in [bases.applicationSupport, bases.documents] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        return bases
    }

    static func write(_ text: String, _ url: URL, modified: Date = Date(timeIntervalSince1970: 1_700_000_000)) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: url.path)
    }

    @Test("A new user folder is made where configured, with originals, reworked and inbound")
    func creates() throws {
        let bases = try Self.bases(under: FileManager.default.temporaryDirectory)
        defer { for folder in [bases.applicationSupport, bases.documents] { try? FileManager.default.removeItem(at: folder) } }
        let folder = try UserFolder.prepare(FolderStructureConfiguration(location: .documents, userId: "u1"), bases: bases)
        #expect(folder.url == bases.documents.appendingPathComponent("u1", isDirectory: true))
        for sub in ["originals", "reworked", "inbound"] {
            #expect(FileManager.default.fileExists(atPath: bases.documents.appendingPathComponent("u1/\(sub)").path))
        }
        #expect(folder.movedFrom == nil && folder.strayCopy == nil)
        #expect(!FileManager.default.fileExists(atPath: bases.applicationSupport.appendingPathComponent("u1").path))
    }

    /// On one file system a rename; from /dev/shm (tmpfs) to the temporary folder a copy,
    /// checked, then the old one removed.
    @Test("A folder found in the other location is moved where configured, every file intact", arguments: [false, true])
    func moves(_ acrossFileSystems: Bool) throws {
        let near = try Self.bases(under: FileManager.default.temporaryDirectory)
        var bases = near
        if acrossFileSystems {
            let shm = URL(fileURLWithPath: "/dev/shm/buckia-user-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: shm, withIntermediateDirectories: true)
            bases.documents = shm
            var a = stat(), b = stat()
            try #require(stat(shm.path, &a) == 0 && stat(near.applicationSupport.path, &b) == 0)
            try #require(a.st_dev != b.st_dev, "/dev/shm and the temporary folder must be two file systems for this case")
        }
        defer { for folder in [bases.applicationSupport, bases.documents, near.documents] { try? FileManager.default.removeItem(at: folder) } }
        let old = bases.documents.appendingPathComponent("u2")
        try Self.write("database", old.appendingPathComponent("backup.sqlite"))
        try Self.write("take 1", old.appendingPathComponent("originals/a.mov"))
        try Self.write("small", old.appendingPathComponent("reworked/deep/a.mp4"))
        let folder = try UserFolder.prepare(FolderStructureConfiguration(location: .applicationSupport, userId: "u2"), bases: bases)
        #expect(folder.movedFrom?.standardizedFileURL.path == old.standardizedFileURL.path)
        #expect(!FileManager.default.fileExists(atPath: old.path), "the old folder is gone once the new one is in place")
        #expect(try String(contentsOf: folder.backup, encoding: .utf8) == "database")
        #expect(try String(contentsOf: folder.originals.appendingPathComponent("a.mov"), encoding: .utf8) == "take 1")
        #expect(try String(contentsOf: folder.reworked.appendingPathComponent("deep/a.mp4"), encoding: .utf8) == "small")
        let modified = try FileManager.default.attributesOfItem(atPath: folder.backup.path)[.modificationDate] as? Date
        #expect(modified == Date(timeIntervalSince1970: 1_700_000_000), "times are kept")
    }

    @Test("A move that cannot finish leaves the old folder exactly as it was")
    func failedMoveLosesNothing() throws {
        let shm = URL(fileURLWithPath: "/dev/shm/buckia-user-\(UUID().uuidString)")
        var bases = try Self.bases(under: FileManager.default.temporaryDirectory)
        bases.documents = shm
        defer { for folder in [bases.applicationSupport, shm] { try? FileManager.default.removeItem(at: folder) } }
        let old = shm.appendingPathComponent("u3")
        try Self.write("database", old.appendingPathComponent("backup.sqlite"))
        try #require(mkfifo(old.appendingPathComponent("a-pipe").path, 0o600) == 0)
        #expect(throws: BuckiaError.self) {
            try UserFolder.prepare(FolderStructureConfiguration(location: .applicationSupport, userId: "u3"), bases: bases)
        }
        #expect(try String(contentsOf: old.appendingPathComponent("backup.sqlite"), encoding: .utf8) == "database")
        #expect(!FileManager.default.fileExists(atPath: bases.applicationSupport.appendingPathComponent("u3").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: bases.applicationSupport.path).isEmpty, "no staging copy left")
    }

    @Test("With a folder in both places the configured one is used and the other reported, untouched")
    func both() throws {
        let bases = try Self.bases(under: FileManager.default.temporaryDirectory)
        defer { for folder in [bases.applicationSupport, bases.documents] { try? FileManager.default.removeItem(at: folder) } }
        try Self.write("here", bases.applicationSupport.appendingPathComponent("u4/backup.sqlite"))
        try Self.write("there", bases.documents.appendingPathComponent("u4/backup.sqlite"))
        let folder = try UserFolder.prepare(FolderStructureConfiguration(location: .applicationSupport, userId: "u4"), bases: bases)
        #expect(folder.strayCopy == bases.documents.appendingPathComponent("u4", isDirectory: true))
        #expect(try String(contentsOf: folder.backup, encoding: .utf8) == "here")
        #expect(try String(contentsOf: bases.documents.appendingPathComponent("u4/backup.sqlite"), encoding: .utf8) == "there")
    }

    @Test("A user id that is not one folder name is refused", arguments: ["", ".", "..", "a/b", "../escape"])
    func badUserId(_ id: String) throws {
        let bases = try Self.bases(under: FileManager.default.temporaryDirectory)
        defer { for folder in [bases.applicationSupport, bases.documents] { try? FileManager.default.removeItem(at: folder) } }
        let error = #expect(throws: BuckiaError.self) { try UserFolder.prepare(FolderStructureConfiguration(userId: id), bases: bases) }
        #expect(error?.code == .invalidConfiguration)
    }

    /// Records what it is asked, and says which changes it settled.
    actor Applier: InboundChangeApplier {
        let history: InboundHistory
        var applied: [String] = []
        init(history: InboundHistory) { self.history = history }
        func inboundHistory() async throws -> InboundHistory { history }
        func apply(_ files: [URL]) async throws { applied += files.map(\.lastPathComponent) }
    }

    @Test("The seed's sequence: newer inbound files down, backup up when changed, new originals and reworked up, never overwritten")
    func sequence() async throws {
        let bases = try Self.bases(under: FileManager.default.temporaryDirectory)
        let (configuration, bucket) = try BuckiaClientTests.local()
        defer { for folder in [bases.applicationSupport, bases.documents, bucket] { try? FileManager.default.removeItem(at: folder) } }
        let client = try await BuckiaClient(configuration: configuration, registry: .builtIn, environment: TestHome.processEnvironment)
        let ids = try (0..<4).map { try KSUID(date: Date(timeIntervalSince1970: 1_700_000_000 + Double($0) * 60)) }
        for id in ids { try Self.write("change \(id)", bucket.appendingPathComponent("u5/inbound/\(id).sqlite")) }
        try Self.write("theirs", bucket.appendingPathComponent("u5/originals/kept.mov"))
        let folder = try UserFolder.prepare(FolderStructureConfiguration(userId: "u5"), bases: bases)
        try Self.write("db v1", folder.backup)
        try Self.write("mine", folder.originals.appendingPathComponent("kept.mov"))
        try Self.write("new take", folder.originals.appendingPathComponent("new.mov"))
        try Self.write("small", folder.reworked.appendingPathComponent("new.mp4"))

        let applier = Applier(history: InboundHistory(newest: ids[1], lateArrivalWindow: .zero, settled: [ids[1]]))
        let first = try await client.syncUserFolder(folder, applier: applier)
        #expect(first.inbound.map(\.lastPathComponent) == ["\(ids[2]).sqlite", "\(ids[3]).sqlite"], "only changes after the last applied, oldest first")
        #expect(await applier.applied == ["\(ids[2]).sqlite", "\(ids[3]).sqlite"])
        #expect(first.uploads.uploaded == 3, "\(first.uploads.plan)")
        #expect(try String(contentsOf: bucket.appendingPathComponent("u5/backup.sqlite"), encoding: .utf8) == "db v1")
        #expect(try String(contentsOf: bucket.appendingPathComponent("u5/originals/kept.mov"), encoding: .utf8) == "theirs", "never overwritten")
        #expect(try String(contentsOf: bucket.appendingPathComponent("u5/originals/new.mov"), encoding: .utf8) == "new take")

        // Nothing changed: nothing moves. Without an applier the local inbound decides.
        let second = try await client.syncUserFolder(folder)
        #expect(second.inbound.isEmpty && second.uploads.uploaded == 0)
        try Self.write("db v2, longer", folder.backup, modified: Date(timeIntervalSince1970: 1_700_000_100))
        try Self.write("new change", bucket.appendingPathComponent("u5/inbound/\(try KSUID(date: Date(timeIntervalSince1970: 1_800_000_000))).sqlite"))
        try Self.write("skipped", folder.originals.appendingPathComponent("later.mov"))
        let third = try await client.syncUserFolder(folder, includeOriginals: false)
        #expect(third.inbound.count == 1)
        #expect(third.uploads.uploaded == 1, "only the backup: originals are off")
        #expect(try String(contentsOf: bucket.appendingPathComponent("u5/backup.sqlite"), encoding: .utf8) == "db v2, longer")
        #expect(!FileManager.default.fileExists(atPath: bucket.appendingPathComponent("u5/originals/later.mov").path))
    }

    /// The local provider without start-after listings: sync then lists the whole inbound folder
    /// and the window alone keeps old files out.
    struct NoStartAfter: ForwardingStorageProvider {
        let base: any StorageProvider
        var capabilities: ProviderCapabilities {
            var capabilities = base.capabilities
            capabilities.features.remove(.listStartAfter)
            return capabilities
        }
    }

    @Test(
        "A change that arrives after a later one was applied is still downloaded inside the window; settled ones and older ones are not",
        arguments: [true, false])
    func lateArrival(startAfter: Bool) async throws {
        let bases = try Self.bases(under: FileManager.default.temporaryDirectory)
        let (configuration, bucket) = try BuckiaClientTests.local()
        defer { for folder in [bases.applicationSupport, bases.documents, bucket] { try? FileManager.default.removeItem(at: folder) } }
        var registry = ProviderRegistry.builtIn
        try registry.register("local-without-start-after") { context in
            NoStartAfter(base: try context.makeProvider(for: BuckiaConfiguration(provider: .local, bucketName: "local", options: configuration.options)))
        }
        let client = try await BuckiaClient(
            configuration: startAfter ? configuration : BuckiaConfiguration(provider: "local-without-start-after", bucketName: "local"), registry: registry)
        #expect(client.provider.capabilities.supports(.listStartAfter) == startAfter)
        let base = 1_700_000_000.0
        // Offsets from the newest applied change, in seconds: two hours before (outside the
        // window), a minute before (late, unsettled), the same second (settled and not), after.
        let old = try KSUID(date: Date(timeIntervalSince1970: base - 7200))
        let late = try KSUID(date: Date(timeIntervalSince1970: base - 60))
        let newest = try KSUID(date: Date(timeIntervalSince1970: base))
        let sameSecond = try KSUID(date: Date(timeIntervalSince1970: base))
        let later = try KSUID(date: Date(timeIntervalSince1970: base + 5))
        for id in [old, late, newest, sameSecond, later] { try Self.write("change", bucket.appendingPathComponent("u6/inbound/\(id).sqlite")) }
        let folder = try UserFolder.prepare(FolderStructureConfiguration(userId: "u6"), bases: bases)
        let applier = Applier(history: InboundHistory(newest: newest, lateArrivalWindow: .seconds(3600), settled: [newest]))
        let result = try await client.syncUserFolder(folder, applier: applier)
        let expected = [late, sameSecond, later].sorted().map { "\($0).sqlite" }
        #expect(result.inbound.map(\.lastPathComponent) == expected)
    }

    @Test("client.sync(options:) syncs a folder with a folder of the bucket, and a resync moves nothing")
    func clientSync() async throws {
        let (configuration, bucket) = try BuckiaClientTests.local()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-client-sync-\(UUID().uuidString)")
        defer { for url in [bucket, folder] { try? FileManager.default.removeItem(at: url) } }
        try Self.write("a", folder.appendingPathComponent("a.txt"))
        try Self.write("b", folder.appendingPathComponent("sub/b.txt"))
        let client = try await BuckiaClient(configuration: configuration, registry: .builtIn, environment: TestHome.processEnvironment)
        let first = try await client.sync(options: SyncOptions(localPath: folder, remotePath: "mirror"))
        #expect(first.filesUploaded == 2 && first.isComplete)
        #expect(try String(contentsOf: bucket.appendingPathComponent("mirror/sub/b.txt"), encoding: .utf8) == "b")
        let second = try await client.sync(options: SyncOptions(localPath: folder, remotePath: "mirror"))
        #expect(second.filesUploaded == 0 && second.summary.unchanged == 2)
        await #expect(throws: BuckiaError.self) { try await client.sync(options: SyncOptions()) }
    }
}
