import BuckiaCatalog
import BuckiaCore
import BuckiaSQLite
import BuckiaTestSupport
import Foundation
import Testing

/// What only the SQLite catalog has: a file that outlives the process, a schema with a
/// version, damage it must name, and removals that survive a failure.
@Suite("File catalog on SQLite")
struct FileCatalogLiveTests {
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-catalog-live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func code(_ body: () throws -> Void) -> (BuckiaError.Code, String)? {
        do {
            try body()
            return nil
        } catch let error as BuckiaError {
            return (error.code, error.message)
        } catch {
            return (.io, "\(error)")
        }
    }

    @Test("Records survive closing and reopening the catalog, in WAL mode, at the current schema version")
    func persistence() async throws {
        let folder = try Self.folder()
        defer { CatalogFixture.removeTree(folder) }
        let path = folder.appendingPathComponent("c.sqlite").path
        do {
            let client = try FileCatalogClient.live(path: path)
            try await client.cacheFiles((1...50).map { record($0, day: $0) })
            try await client.saveContext()
        }
        let reopened = try FileCatalogClient.live(path: path)
        #expect(try await reopened.getFiles().map(\.fileId) == (1...50).reversed().map { "id-\($0)" })
        let db = try SQLiteConnection(path: path)
        #expect(try db.query("PRAGMA journal_mode") { $0.string(0) }.first == "wal")
        #expect(try db.query("PRAGMA user_version") { $0.int64(0) }.first == 1)
    }

    @Test("A catalog from a newer Buckia, or a database of another application, is refused and left untouched")
    func refusedDatabases() throws {
        let folder = try Self.folder()
        defer { CatalogFixture.removeTree(folder) }
        let newer = folder.appendingPathComponent("newer.sqlite").path
        _ = try FileCatalogClient.live(path: newer)
        try SQLiteConnection(path: newer).execute("PRAGMA user_version = 7")
        let before = try Data(contentsOf: URL(fileURLWithPath: newer))
        let refusal = Self.code { _ = try FileCatalogClient.live(path: newer) }
        #expect(refusal?.0 == .invalidConfiguration && refusal?.1.contains("newer Buckia") == true, "\(String(describing: refusal))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: newer)) == before)
        #expect(try SQLiteConnection(path: newer).query("PRAGMA user_version") { $0.int64(0) }.first == 7)

        let foreign = folder.appendingPathComponent("foreign.sqlite").path
        try SQLiteConnection(path: foreign).execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')")
        let other = Self.code { _ = try FileCatalogClient.live(path: foreign) }
        #expect(other?.0 == .invalidConfiguration && other?.1.contains("not a file catalog") == true, "\(String(describing: other))")
        #expect(try SQLiteConnection(path: foreign).query("SELECT body FROM notes") { $0.string(0) } == ["keep me"])
    }

    @Test("A damaged catalog is a corrupt error that says how to rebuild it, never an empty catalog")
    func corrupt() async throws {
        let folder = try Self.folder()
        defer { CatalogFixture.removeTree(folder) }
        let path = folder.appendingPathComponent("c.sqlite").path
        do {
            let client = try FileCatalogClient.live(path: path)
            try await client.cacheFiles((1...2000).map { record($0) })
            try await client.saveContext()
        }
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.removeItem(atPath: path + suffix)
        }
        // Overwrite every page after the first with noise: the header stays, the b-trees do not.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        for index in 4096..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: index &* 7 &+ 13) }
        try bytes.write(to: URL(fileURLWithPath: path))
        var failure: BuckiaError?
        do {
            let client = try FileCatalogClient.live(path: path)
            _ = try await client.getFiles()
        } catch let error as BuckiaError {
            failure = error
        }
        #expect(failure?.code == .corrupt, "\(String(describing: failure))")
        #expect(failure?.message.contains("Rebuild") == true)
    }

    @Test("A removal that fails stays queued, is reported, and is done when the catalog next opens")
    func outboxRetried() async throws {
        let folder = try Self.folder()
        defer { CatalogFixture.removeTree(folder) }
        let media = folder.appendingPathComponent("media")
        try Data("not a folder".utf8).write(to: media)  // the media folder is a file: removing fails
        let path = folder.appendingPathComponent("c.sqlite").path
        let client = try FileCatalogClient.live(path: path, configuration: FileCatalogConfiguration(mediaRoot: media))
        try await client.cacheFile(record(1))
        var reported: BuckiaError?
        do {
            try await client.deleteFile(record(1))
        } catch let error as BuckiaError {
            reported = error
        }
        #expect(reported?.code == .io && reported?.message.contains("stays queued") == true, "\(String(describing: reported))")
        #expect(try await client.getFile("id-1") == nil, "the record's removal was committed first")
        // Fixed by hand: the folder, with the file the record named.
        try FileManager.default.removeItem(at: media)
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        let copy = media.appendingPathComponent("1.mp4")
        try Data("media".utf8).write(to: copy)
        _ = try FileCatalogClient.live(path: path, configuration: FileCatalogConfiguration(mediaRoot: media))
        #expect(!FileManager.default.fileExists(atPath: copy.path))
        #expect(try SQLiteConnection(path: path).query("SELECT count(*) FROM catalog_removals") { $0.int64(0) }.first == 0)
    }

    @Test("A removal committed but not done (the process killed in between) waits through opens without a media folder and is done on the next open with one")
    func outboxAfterKill() throws {
        let folder = try Self.folder()
        defer { CatalogFixture.removeTree(folder) }
        let media = folder.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("c.sqlite").path
        _ = try FileCatalogClient.live(path: path, configuration: FileCatalogConfiguration(mediaRoot: media))
        // What deleteFile commits before it removes the file, as a kill would leave it.
        try SQLiteConnection(path: path).execute("INSERT INTO catalog_removals (kind, path) VALUES ('file', 'left.mp4')")
        let left = media.appendingPathComponent("left.mp4")
        try Data("media".utf8).write(to: left)
        // A reader that knows no media folder (`catalog ls` without --media) leaves the queue.
        _ = try FileCatalogClient.live(path: path)
        #expect(try SQLiteConnection(path: path).query("SELECT count(*) FROM catalog_removals") { $0.int64(0) }.first == 1)
        _ = try FileCatalogClient.live(path: path, configuration: FileCatalogConfiguration(mediaRoot: media))
        #expect(!FileManager.default.fileExists(atPath: left.path))
        #expect(try SQLiteConnection(path: path).query("SELECT count(*) FROM catalog_removals") { $0.int64(0) }.first == 0)
    }

    @Test("Sixteen connections opening one new catalog at the same moment all succeed, 20 times over: one migrates, the others find it done")
    func concurrentCreation() throws {
        let folder = try Self.folder()
        defer { CatalogFixture.removeTree(folder) }
        let failures = simultaneously(threads: 16, rounds: 20) { round in
            _ = try FileCatalogClient.live(path: folder.appendingPathComponent("c\(round).sqlite").path)
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
    }

    /// A commit by another process — the sqlite3 shell, which knows nothing of Buckia — reaches a
    /// live query although this process writes nothing. The waits are on the stream's next list;
    /// the time limit only guards against a catalog that never hands one over.
    @Test("A live query sees a commit another process makes to the file", .timeLimit(.minutes(10)))
    func otherProcessCommits() async throws {
        let folder = try Self.folder()
        defer { CatalogFixture.removeTree(folder) }
        let path = folder.appendingPathComponent("c.sqlite").path
        let client = try FileCatalogClient.live(path: path)
        try await client.cacheFile(record(1, day: 1))
        var updates = client.observeFiles().makeAsyncIterator()
        #expect(try await updates.next()?.map(\.fileId) == ["id-1"])

        let insert = try ToolRun.run("sqlite3", [
            path, "INSERT INTO catalog_files (file_id, key, title, publish_date) VALUES ('from-shell', 'shell/a.mp4', 'From the shell', 864000)",
        ])
        #expect(insert.status == 0, "sqlite3: \(insert.errors)")
        let seen = try await updates.next()
        #expect(seen?.map(\.fileId) == ["from-shell", "id-1"])
        #expect(seen?.first?.title == "From the shell")

        let delete = try ToolRun.run("sqlite3", [path, "DELETE FROM catalog_files WHERE file_id = 'id-1'"])
        #expect(delete.status == 0, "sqlite3: \(delete.errors)")
        #expect(try await updates.next()?.map(\.fileId) == ["from-shell"])
    }

    /// A reader that starts after another process's commit and before the next check takes
    /// that commit in its first list; the readers already there get it then too, not never.
    /// (The check's interval is an hour, so only the new reader's start can hand it over.)
    @Test("A reader starting after another process's commit hands it to the readers already there", .timeLimit(.minutes(10)))
    func newReaderHandsOverOtherCommits() async throws {
        let folder = try Self.folder()
        defer { CatalogFixture.removeTree(folder) }
        let path = folder.appendingPathComponent("c.sqlite").path
        var configuration = FileCatalogConfiguration()
        configuration.otherConnectionsCheckInterval = .seconds(3600)
        let client = try FileCatalogClient.live(path: path, configuration: configuration)
        var first = client.observeFiles().makeAsyncIterator()
        #expect(try await first.next()?.map(\.fileId) == [])
        let insert = try ToolRun.run("sqlite3", [path, "INSERT INTO catalog_files (file_id, key) VALUES ('from-shell', 'shell/a.mp4')"])
        #expect(insert.status == 0, "sqlite3: \(insert.errors)")
        var second = client.observeFiles().makeAsyncIterator()
        #expect(try await second.next()?.map(\.fileId) == ["from-shell"])
        #expect(try await first.next()?.map(\.fileId) == ["from-shell"])
    }

    @Test("With the check turned off, another process's commit reaches the live query with this catalog's next change", .timeLimit(.minutes(10)))
    func otherProcessCommitsUnchecked() async throws {
        let folder = try Self.folder()
        defer { CatalogFixture.removeTree(folder) }
        let path = folder.appendingPathComponent("c.sqlite").path
        var configuration = FileCatalogConfiguration()
        configuration.otherConnectionsCheckInterval = nil
        let client = try FileCatalogClient.live(path: path, configuration: configuration)
        var updates = client.observeFiles().makeAsyncIterator()
        #expect(try await updates.next()?.map(\.fileId) == [])
        let insert = try ToolRun.run("sqlite3", [path, "INSERT INTO catalog_files (file_id, key) VALUES ('from-shell', 'shell/a.mp4')"])
        #expect(insert.status == 0, "sqlite3: \(insert.errors)")
        // The next list is the one after this catalog's own change, and holds both records.
        try await client.cacheFile(record(1, day: 1))
        #expect(try await updates.next()?.map(\.fileId) == ["id-1", "from-shell"])
    }
}
