import BuckiaClient
import BuckiaCore
import BuckiaDatabase
import BuckiaSQLite
import BuckiaUserFolder
import Foundation

/// The two-user diff exchange, run over any bucket: each user edits their own database, sends a
/// diff of the edit to the other's `inbound/`, and syncs their user folder; both databases must
/// end equal, row for row, to one database that made both edits. The database tests run it
/// over the local provider, the S3 tests over moto, the B2 tests over the emulator.
public enum DatabaseExchange {
    static let schema = """
        CREATE TABLE recordings (id INTEGER PRIMARY KEY, title TEXT NOT NULL DEFAULT '', owner TEXT, duration REAL, thumbnail BLOB);
        CREATE TABLE shares (recording INTEGER NOT NULL, user TEXT NOT NULL, role TEXT NOT NULL DEFAULT 'viewer', PRIMARY KEY (recording, user));
        INSERT INTO recordings VALUES (1, 'first take', 'u1', 10.0, NULL), (2, 'second take', 'u2', 20.0, NULL), (3, 'old take', 'u1', 5.0, NULL);
        """
    /// A's edit: a title changes and a recording goes. B's: a share and a new recording.
    static let editA = "UPDATE recordings SET title = 'first take, trimmed', duration = 8.5 WHERE id = 1; DELETE FROM recordings WHERE id = 3;"
    static let editB = "INSERT INTO shares VALUES (2, 'u1', 'editor'); INSERT INTO recordings VALUES (4, 'new take', 'u2', 3.25, X'0102');"

    /// Runs the exchange through `client`'s bucket with scratch files under `root`, for users
    /// named `<prefix>a` and `<prefix>b`.
    ///
    /// - Returns: What went wrong, empty when nothing did.
    public static func run(through client: BuckiaClient, root: URL, userPrefix prefix: String = "u") async throws -> [String] {
        var problems: [String] = []
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let bases = UserFolder.Bases(applicationSupport: root.appendingPathComponent("support"), documents: root.appendingPathComponent("documents"))
        func user(_ id: String, at date: Date) throws -> (DatabaseManager, UserFolder, URL) {
            let database = root.appendingPathComponent("\(id).sqlite")
            let manager = DatabaseManager(
                folderStructure: FolderStructureConfiguration(userId: id), database: database, bases: bases,
                options: .init(outbox: root.appendingPathComponent("outbox-\(id)")), clock: { date })
            return (manager, try manager.userFolder(), database)
        }
        let (idA, idB) = (prefix + "a", prefix + "b")
        let (a, folderA, databaseA) = try user(idA, at: now)
        let (b, folderB, databaseB) = try user(idB, at: now.addingTimeInterval(1))
        try SQLiteConnection(path: databaseA.path).execute(schema + editA)
        try SQLiteConnection(path: databaseB.path).execute(schema + editB)

        var changesA = DatabaseChanges()
        changesA.upsert(["id": 1, "title": "first take, trimmed", "duration": 8.5], into: "recordings")
        changesA.delete(["id": 3], from: "recordings")
        var changesB = DatabaseChanges()
        changesB.upsert(["recording": 2, "user": "u1", "role": "editor"], into: "shares")
        changesB.upsert(["id": 4, "title": "new take", "owner": "u2", "duration": 3.25, "thumbnail": .blob(Data([1, 2]))], into: "recordings")
        let diffA = try await a.createDatabaseDiff(for: changesA)
        let diffB = try await b.createDatabaseDiff(for: changesB)
        try await a.send(diffA, to: idB, through: client.provider)
        try await b.send(diffB, to: idA, through: client.provider)
        do {
            try await a.send(diffA, to: idB, through: client.provider)
            problems.append("a second send of the same diff succeeded")
        } catch let error as BuckiaError where error.code == .alreadyExists {}

        let syncA = try await client.syncUserFolder(folderA, applier: a)
        let syncB = try await client.syncUserFolder(folderB, applier: b)
        if syncA.inbound.map(\.lastPathComponent) != [diffB.lastPathComponent] { problems.append("A downloaded \(syncA.inbound)") }
        if syncB.inbound.map(\.lastPathComponent) != [diffA.lastPathComponent] { problems.append("B downloaded \(syncB.inbound)") }

        let reference = root.appendingPathComponent("both.sqlite")
        try SQLiteConnection(path: reference.path).execute(schema + editA + editB)
        let expected = try dump(reference)
        if try dump(databaseA) != expected { problems.append("A's database differs from one that made both edits: \(try dump(databaseA)) against \(expected)") }
        if try dump(databaseB) != expected { problems.append("B's database differs from one that made both edits: \(try dump(databaseB)) against \(expected)") }
        for (manager, folder) in [(a, folderA), (b, folderB)] {
            let left = try FileManager.default.contentsOfDirectory(atPath: folder.inbound.path)
            if !left.isEmpty { problems.append("\(folder.userId)'s inbound/ still holds \(left)") }
            let status = try await manager.status()
            if status.appliedCount != 1 || !status.refused.isEmpty || !status.pending.isEmpty {
                problems.append("\(folder.userId): \(status.appliedCount) applied, \(status.refused.count) refused, \(status.pending.count) pending")
            }
        }
        // Settled: a second sync downloads nothing.
        let resync = try await client.syncUserFolder(folderA, applier: a)
        if !resync.inbound.isEmpty { problems.append("a resync downloaded \(resync.inbound)") }
        // The backup the next sync uploads is the database.
        try await a.backupDatabase()
        _ = try await client.syncUserFolder(folderA, applier: a)
        let uploaded = root.appendingPathComponent("downloaded-backup.sqlite")
        _ = try await client.provider.downloadFile(remotePath: try ObjectKey("\(idA)/backup.sqlite"), localURL: uploaded, options: ReadOptions())
        if try dump(uploaded) != expected { problems.append("the uploaded backup differs from A's database") }
        return problems
    }

    /// Every row of every table but Buckia's and SQLite's own, sorted, as text.
    public static func dump(_ url: URL) throws -> [String] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        let tables = try connection.query(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'buckia_%' AND name NOT LIKE 'sqlite_%' ORDER BY name") { $0.string(0) ?? "" }
        var lines: [String] = []
        for table in tables {
            lines += try connection.query("SELECT * FROM \"\(table)\"") { row in (0..<row.count).map { "\(row.value($0))" }.joined(separator: "|") }
                .sorted().map { "\(table): \($0)" }
        }
        return lines
    }
}
