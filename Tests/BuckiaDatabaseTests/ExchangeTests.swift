import Buckia
import BuckiaClient
import BuckiaCore
@testable import BuckiaDatabase
import BuckiaSQLite
import Foundation
import Testing

/// Two users exchanging diffs through a bucket: each edits their own database, sends a diff to
/// the other's `inbound/`, and syncs; both end equal to one database that made both edits.
@Suite("Diff exchange between users")
struct ExchangeTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    /// A user with a database and a manager, under `folder`.
    struct User {
        let id: String
        let database: URL
        let manager: DatabaseManager
        let folder: UserFolder

        init(_ id: String, under root: URL, clock: @escaping @Sendable () -> Date) throws {
            self.id = id
            database = root.appendingPathComponent("\(id).sqlite")
            let bases = UserFolder.Bases(applicationSupport: root.appendingPathComponent("support"), documents: root.appendingPathComponent("documents"))
            manager = DatabaseManager(
                folderStructure: FolderStructureConfiguration(userId: id), database: database, bases: bases,
                options: .init(outbox: root.appendingPathComponent("outbox-\(id)")), clock: clock)
            folder = try manager.userFolder()
        }
    }

    static let base = """
        INSERT INTO recordings VALUES (1, 'first take', 'u1', 10.0, NULL), (2, 'second take', 'u2', 20.0, NULL), (3, 'old take', 'u1', 5.0, NULL);
        """
    /// A's edit: a title changes and a recording goes. B's edit: a share and a new recording.
    static let editA = "UPDATE recordings SET title = 'first take, trimmed', duration = 8.5 WHERE id = 1; DELETE FROM recordings WHERE id = 3;"
    static let editB = "INSERT INTO shares VALUES (2, 'u1', 'editor'); INSERT INTO recordings VALUES (4, 'new take', 'u2', 3.25, X'0102');"

    /// Runs the exchange over `client`'s bucket.
    static func exchange(through client: BuckiaClient, root: URL) async throws {
        let a = try User("u1", under: root, clock: { now }), b = try User("u2", under: root, clock: { now.addingTimeInterval(1) })
        try DB.make(a.database, base + editA)
        try DB.make(b.database, base + editB)

        var changesA = DatabaseChanges()
        changesA.upsert(["id": 1, "title": "first take, trimmed", "duration": 8.5], into: "recordings")
        changesA.delete(["id": 3], from: "recordings")
        var changesB = DatabaseChanges()
        changesB.upsert(["recording": 2, "user": "u1", "role": "editor"], into: "shares")
        changesB.upsert(["id": 4, "title": "new take", "owner": "u2", "duration": 3.25, "thumbnail": .blob(Data([1, 2]))], into: "recordings")
        let diffA = try await a.manager.createDatabaseDiff(for: changesA)
        let diffB = try await b.manager.createDatabaseDiff(for: changesB)
        try await a.manager.send(diffA, to: "u2", through: client.provider)
        try await b.manager.send(diffB, to: "u1", through: client.provider)
        // Never over an existing diff.
        let again = await #expect(throws: BuckiaError.self) { try await a.manager.send(diffA, to: "u2", through: client.provider) }
        #expect(again?.code == .alreadyExists)

        let syncA = try await client.syncUserFolder(a.folder, applier: a.manager)
        let syncB = try await client.syncUserFolder(b.folder, applier: b.manager)
        #expect(syncA.inbound.map(\.lastPathComponent) == [diffB.lastPathComponent])
        #expect(syncB.inbound.map(\.lastPathComponent) == [diffA.lastPathComponent])

        let reference = root.appendingPathComponent("both.sqlite")
        try DB.make(reference, base + editA + editB)
        #expect(try DB.dump(a.database) == DB.dump(reference))
        #expect(try DB.dump(b.database) == DB.dump(reference))
        for user in [a, b] {
            let left = try FileManager.default.contentsOfDirectory(atPath: user.folder.inbound.path)
            #expect(left == [], "applied files are dropped: \(left)")
            let status = try await user.manager.status()
            #expect(status.appliedCount == 1 && status.refused.isEmpty && status.pending.isEmpty)
        }
        // A second sync downloads nothing and applies nothing: the diffs are settled.
        let resync = try await client.syncUserFolder(a.folder, applier: a.manager)
        #expect(resync.inbound.isEmpty)
        // The backup the sync uploaded is the database.
        try await a.manager.backupDatabase()
        _ = try await client.syncUserFolder(a.folder, applier: a.manager)
        let uploaded = root.appendingPathComponent("downloaded-backup.sqlite")
        _ = try await client.provider.downloadFile(remotePath: try ObjectKey("u1/backup.sqlite"), localURL: uploaded, options: ReadOptions())
        #expect(try DB.dump(uploaded) == DB.dump(reference))
    }

    @Test("Two users exchange diffs through the local provider and end equal")
    func local() async throws {
        let root = try DB.scratch("exchange")
        defer { try? FileManager.default.removeItem(at: root) }
        let bucket = root.appendingPathComponent("bucket")
        try FileManager.default.createDirectory(at: bucket, withIntermediateDirectories: true)
        let client = try await BuckiaClient(configuration: BuckiaConfiguration(provider: .local, bucketName: "local", options: ["root": bucket.path]))
        try await Self.exchange(through: client, root: root)
    }
}
