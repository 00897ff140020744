import BuckiaCore
@testable import BuckiaDatabase
import BuckiaSQLite
import Foundation
import Testing

/// Backups taken while another connection keeps committing, and restores.
@Suite("Database backups: consistent under a writer, checked, atomic")
struct BackupTests {
    static let accounts = 50
    static let total: Int64 = 50 * 1000

    /// A database of accounts whose balances always sum to ``total``: a torn copy shows as
    /// another sum.
    static func bank(_ url: URL, wal: Bool) throws {
        let connection = try SQLiteConnection(path: url.path)
        if wal { try connection.setJournalMode(.wal) }
        try connection.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, note BLOB); CREATE TABLE log (n INTEGER PRIMARY KEY)")
        try connection.transaction {
            for id in 0..<accounts { try connection.run("INSERT INTO accounts VALUES (?, 1000, randomblob(2000))", [.integer(Int64(id))]) }
        }
    }

    /// Moves money between accounts in one transaction after another until `stop` is set, on a
    /// thread of its own (never the cooperative pool), and tells whoever waits how far it got.
    final class WriterState: Sendable {
        let stop = Locked(false)
        private let progress = Locked((commits: 0, ended: false, waiters: [(target: Int, continuation: CheckedContinuation<Int, Never>)]()))

        /// Counts a commit and wakes the waiters it satisfies.
        func committed() {
            let woken = progress.withLock { state -> [(CheckedContinuation<Int, Never>, Int)] in
                state.commits += 1
                let ready = state.waiters.filter { $0.target <= state.commits }
                state.waiters.removeAll { $0.target <= state.commits }
                return ready.map { ($0.continuation, state.commits) }
            }
            for (continuation, commits) in woken { continuation.resume(returning: commits) }
        }

        /// Marks the writer's end and wakes every waiter.
        func ended() {
            let woken = progress.withLock { state -> ([CheckedContinuation<Int, Never>], Int) in
                state.ended = true
                defer { state.waiters.removeAll() }
                return (state.waiters.map(\.continuation), state.commits)
            }
            for continuation in woken.0 { continuation.resume(returning: woken.1) }
        }

        var commits: Int { progress.withLock { $0.commits } }

        /// Returns once the writer has made `target` commits in all, or has ended: the commits then.
        func commits(atLeast target: Int) async -> Int {
            await withCheckedContinuation { continuation in
                let now = progress.withLock { state -> Int? in
                    guard state.commits < target, !state.ended else { return state.commits }
                    state.waiters.append((target, continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        }
    }

    static func startWriter(_ url: URL, state: WriterState, wal: Bool) -> Thread {
        let thread = Thread {
            defer { state.ended() }
            do {
                let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(30))
                var n: Int64 = 0
                while !state.stop.withLock({ $0 }) {
                    // In rollback-journal mode a writer that never pauses starves every reader
                    // (each waits for a moment between two commits that never comes): Python's
                    // stock sqlite3 module shows the same. This writer leaves half a millisecond
                    // between commits, the load's shape, not a wait for anything.
                    if !wal { usleep(500) }
                    n += 1
                    let from = Int64.random(in: 0..<Int64(accounts)), to = Int64.random(in: 0..<Int64(accounts))
                    try connection.transaction {
                        try connection.run("UPDATE accounts SET balance = balance - 7, note = randomblob(2000) WHERE id = ?", [.integer(from)])
                        try connection.run("UPDATE accounts SET balance = balance + 7 WHERE id = ?", [.integer(to)])
                        try connection.run("INSERT INTO log VALUES (?)", [.integer(n)])
                    }
                    state.committed()
                }
            } catch {
                Issue.record("the writer failed: \(error)")
            }
        }
        thread.start()
        return thread
    }

    @Test("A backup taken while a writer commits is one consistent snapshot", arguments: BackupMethod.allCases, [true, false])
    func consistentUnderWriter(_ method: BackupMethod, wal: Bool) async throws {
        let folder = try DB.scratch("backup")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("bank.sqlite"), backup = folder.appendingPathComponent("backup.sqlite")
        try Self.bank(database, wal: wal)
        let state = WriterState()
        _ = Self.startWriter(database, state: state, wal: wal)
        defer { state.stop.withLock { $0 = true } }
        var seen: [Int64] = []
        for _ in 0..<5 {
            // Wait for the writer to have committed more since the last backup.
            let target = state.commits + 20
            #expect(await state.commits(atLeast: target) >= target, "the writer ended early")
            let result = try DatabaseBackup.write(from: database, to: backup, method: method)
            #expect(result.size > 0)
            let copy = try SQLiteConnection(path: backup.path, mode: .readOnly)
            #expect(try copy.quickCheck().isEmpty)
            #expect(try copy.query("SELECT sum(balance) FROM accounts") { $0.int64(0) } == [Self.total], "a torn copy")
            let logged = try copy.query("SELECT count(*), coalesce(max(n), 0) FROM log") { [$0.int64(0), $0.int64(1)] }.first ?? []
            #expect(logged.count == 2 && logged[0] == logged[1], "every commit up to the snapshot, and none after a gap")
            #expect(try copy.query("PRAGMA journal_mode") { $0.string(0) ?? "" } == ["delete"], "one self-contained file")
            seen.append(logged.first ?? 0)
        }
        state.stop.withLock { $0 = true }
        _ = await state.commits(atLeast: .max)  // returns when the writer has ended
        #expect(seen == seen.sorted() && Set(seen).count == seen.count, "each backup is newer than the last: \(seen)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).allSatisfy { !$0.hasPrefix(".buckia-") }, "no temporary left")
    }

    @Test("A failed backup leaves the previous backup as it was")
    func failedBackupKeepsOld() throws {
        let folder = try DB.scratch("backup")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("bank.sqlite"), backup = folder.appendingPathComponent("backup.sqlite")
        try Self.bank(database, wal: true)
        try DatabaseBackup.write(from: database, to: backup, method: .onlineBackup)
        let before = try Data(contentsOf: backup)
        // The database is now not a database: the backup fails, and the old one stays.
        try Data("not a database".utf8).write(to: database)
        for leftover in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: database.path + leftover) {
            try FileManager.default.removeItem(atPath: database.path + leftover)
        }
        #expect(throws: BuckiaError.self) { try DatabaseBackup.write(from: database, to: backup, method: .onlineBackup) }
        #expect(try Data(contentsOf: backup) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).allSatisfy { !$0.hasPrefix(".buckia-") })
    }

    @Test("Restore puts the backup back under an open connection, which sees it at once", arguments: [true, false])
    func restore(_ wal: Bool) throws {
        let folder = try DB.scratch("restore")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("bank.sqlite"), backup = folder.appendingPathComponent("backup.sqlite")
        try Self.bank(database, wal: wal)
        try DatabaseBackup.write(from: database, to: backup, method: .onlineBackup)
        let app = try SQLiteConnection(path: database.path)
        try app.execute("DELETE FROM accounts WHERE id < 10")
        #expect(try app.query("SELECT count(*) FROM accounts") { $0.int64(0) } == [40])
        try DatabaseBackup.restore(from: backup, to: database)
        #expect(try app.query("SELECT count(*), sum(balance) FROM accounts") { [$0.int64(0), $0.int64(1)] } == [[50, Self.total]])
        #expect(try app.query("PRAGMA integrity_check") { $0.string(0) ?? "" } == ["ok"])
        // Where there is no database, restore makes one.
        let fresh = folder.appendingPathComponent("fresh.sqlite")
        try DatabaseBackup.restore(from: backup, to: fresh)
        #expect(try DB.dumpTable(fresh, "accounts").count == 50)
    }

    @Test("A backup that fails quick_check is refused, and the database is left as it was")
    func restoreRefusesDamagedBackup() throws {
        let folder = try DB.scratch("restore")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("bank.sqlite"), backup = folder.appendingPathComponent("backup.sqlite")
        try Self.bank(database, wal: false)
        try DatabaseBackup.write(from: database, to: backup, method: .onlineBackup)
        // Damage a b-tree page of the backup (page 3: the accounts table's data).
        var bytes = try Data(contentsOf: backup)
        for offset in (2 * 4096)..<(2 * 4096 + 64) { bytes[offset] ^= 0x5A }
        try bytes.write(to: backup)
        let before = try DB.bytes(database)
        let error = #expect(throws: BuckiaError.self) { try DatabaseBackup.restore(from: backup, to: database) }
        #expect(error?.code == .corrupt)
        #expect(try DB.bytes(database) == before)
    }
}
