import BuckiaCore
import BuckiaSQLite
import Foundation
import Testing

/// The shared database types every SQLite user in Buckia holds: one connection a call at a
/// time, its work on a blocking pool, and what it learns of commits.
@Suite("SQLite database")
struct SQLiteDatabaseTests {
    struct Refused: Error {}

    static let seesThreads = SystemCalls.threadID() >= 0

    static func count(_ db: SQLiteConnection) throws -> Int64 {
        try db.query("SELECT count(*) FROM t") { $0.int64(0) }.first ?? -1
    }

    @Test("write commits what its closure did, and rolls all of it back when the closure throws")
    func writeIsATransaction() async throws {
        let folder = try DatabaseFolder()
        let database = try SQLiteDatabase(path: folder.path("a.sqlite"))
        try await database.write("create") { try $0.execute("CREATE TABLE t (x INTEGER)") }
        try await database.write("insert") { try $0.run("INSERT INTO t VALUES (1)") }
        await #expect(throws: Refused.self) {
            try await database.write("insert and fail") { db in
                try db.run("INSERT INTO t VALUES (2)")
                throw Refused()
            }
        }
        #expect(try await database.read("count") { try Self.count($0) } == 1)
        // Another connection sees the commit: it reached the file.
        #expect(try Self.count(SQLiteConnection(path: folder.path("a.sqlite"))) == 1)
    }

    @Test("read and write run on the pool they were given, not on the caller's thread", .enabled(if: seesThreads))
    func runsOnThePool() async throws {
        let folder = try DatabaseFolder()
        let pool = BlockingPool(threads: 1, name: "buckia-t-sql")
        let database = try SQLiteDatabase(path: folder.path("a.sqlite"), pool: pool)
        let reader = try await database.read("where") { _ in SystemCalls.threadID() }
        let writer = try await database.write("where") { _ in SystemCalls.threadID() }
        #expect(pool.threadIDs == [reader])
        #expect(writer == reader)
        await pool.shutdown()
    }

    /// Counts `t` in `body`'s connection before and after another connection commits a row.
    static func countsAroundACommit(_ db: SQLiteConnection, file: String) throws -> [Int64] {
        let before = try count(db)
        try SQLiteConnection(path: file).run("INSERT INTO t VALUES (9)")
        return [before, try count(db)]
    }

    @Test("read is one snapshot: another connection's commit during it is not seen; run sees it at once")
    func readIsOneSnapshot() async throws {
        let folder = try DatabaseFolder()
        let file = folder.path("a.sqlite")
        let database = try SQLiteDatabase(path: file)
        try database.withConnection { try $0.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER)") }
        #expect(try await database.read("count twice") { try Self.countsAroundACommit($0, file: file) } == [0, 0])
        #expect(try await database.run("count twice") { try Self.countsAroundACommit($0, file: file) } == [1, 2])
    }

    @Test("A database pool's async write runs on the writer, on the pool it was given", .enabled(if: seesThreads))
    func poolWritesOnItsPool() async throws {
        let folder = try DatabaseFolder()
        let pool = BlockingPool(threads: 1, name: "buckia-t-sqlp")
        let file = folder.path("a.sqlite")
        let connections = SQLiteDatabasePool(primary: try SQLiteConnection(path: file), pool: pool) {
            try SQLiteConnection(path: file, mode: .readOnly)
        }
        let (thread, path) = try await connections.write("where") { db in
            try db.execute("CREATE TABLE t (x INTEGER)")
            return (SystemCalls.threadID(), db.path)
        }
        #expect(pool.threadIDs == [thread])
        #expect(path == file)
        #expect(try connections.read { try Self.count($0) } == 0)
        await pool.shutdown()
    }

    @Test("othersCommitted sees another connection's commits, never its own")
    func othersCommitted() throws {
        let folder = try DatabaseFolder()
        let database = try SQLiteDatabase(path: folder.path("a.sqlite"))
        try database.withConnection { try $0.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER)") }
        #expect(try database.othersCommitted() == false, "the first call only remembers")
        try database.withConnection { try $0.run("INSERT INTO t VALUES (1)") }
        #expect(try database.othersCommitted() == false, "its own commit")
        let other = try SQLiteConnection(path: folder.path("a.sqlite"))
        try other.run("INSERT INTO t VALUES (2)")
        #expect(try database.othersCommitted() == true, "another connection's commit")
        #expect(try database.othersCommitted() == false, "told once")
        try other.run("DELETE FROM t")
        #expect(try database.othersCommitted() == true)
    }

    @Test("takeCommitted says once that a transaction of the connection committed; reads and rollbacks are not commits")
    func takeCommitted() throws {
        let db = try SQLiteConnection.inMemory()
        try db.execute("CREATE TABLE t (x INTEGER)")
        #expect(db.takeCommitted() == false, "before tracking")
        db.trackCommits()
        try db.run("INSERT INTO t VALUES (1)")
        #expect(db.takeCommitted() == true)
        #expect(db.takeCommitted() == false)
        _ = try Self.count(db)
        #expect(db.takeCommitted() == false, "a read")
        #expect(throws: Refused.self) {
            try db.transaction {
                try db.run("INSERT INTO t VALUES (2)")
                throw Refused()
            }
        }
        #expect(db.takeCommitted() == false, "a rollback")
    }

    @Test("A read while the writer is busy runs on a reader connection and sees the last commit")
    func readBesideAWrite() throws {
        let folder = try DatabaseFolder()
        let path = folder.path("a.sqlite")
        let primary = try SQLiteConnection(path: path)
        _ = try primary.setJournalMode(.wal)
        try primary.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)")
        let opened = Locked(0)
        let pool = SQLiteDatabasePool(primary: primary) {
            opened.withLock { $0 += 1 }
            return try SQLiteConnection(path: path, mode: .readOnly)
        }
        #expect(try pool.read { try Self.count($0) } == 1)
        #expect(opened.withLock { $0 } == 0, "a read with the writer free uses the writer")
        try pool.write { db in
            try db.transaction {
                try db.run("INSERT INTO t VALUES (2)")
                // The writer is held here: the read takes a reader, which sees the last commit.
                #expect(try pool.read { try Self.count($0) } == 1)
            }
        }
        #expect(opened.withLock { $0 } == 1)
        #expect(try pool.read { try Self.count($0) } == 2)
    }
}
