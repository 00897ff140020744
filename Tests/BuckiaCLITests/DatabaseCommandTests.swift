import Buckia
@testable import BuckiaDatabase
import BuckiaSQLite
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `buckia db`: each action against the built binary, and the kill harness over `db apply`.
@Suite("buckia db: backup, restore, diff, apply, inspect, status, send")
struct DatabaseCommandTests {
    static let schema = "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER); CREATE TABLE log (diff INTEGER PRIMARY KEY);"

    @Test("backup, diff, inspect, apply (twice), status and restore, as the help says")
    func actions() throws {
        let cli = try CLIHarness()
        let old = cli.home.appendingPathComponent("old.sqlite"), new = cli.home.appendingPathComponent("new.sqlite")
        let app = cli.home.appendingPathComponent("app.sqlite")
        for url in [old, app] { try SQLiteConnection(path: url.path).execute(Self.schema + "INSERT INTO items VALUES (1, 'one', 1), (2, 'two', 2);") }
        try SQLiteConnection(path: new.path).execute(Self.schema + "INSERT INTO items VALUES (1, 'one', 10), (3, 'three', 3);")

        let backup = try cli.run("db", "backup", app.path)
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.hasPrefix("backed up \(app.path) to \(cli.home.appendingPathComponent("app.backup.sqlite").path): "))
        let diff = try cli.run("db", "diff", old.path, new.path, "--sender", "u1", "-o", cli.home.path)
        #expect(diff.status == 0, "\(diff.stderr)")
        let file = diff.stdout.trimmingCharacters(in: .newlines)
        #expect(URL(fileURLWithPath: file).deletingLastPathComponent().path == cli.home.path)
        let inspect = try cli.run("db", "inspect", file)
        #expect(inspect.stdout.contains("from u1") && inspect.stdout.contains("  items: 2 upserts, 1 deletes; columns id INTEGER key 1, name TEXT, n INTEGER"), "\(inspect.stdout)")
        let apply = try cli.run("db", "apply", app.path, file)
        #expect(apply.status == 0, "\(apply.stderr)")
        #expect(apply.stdout.hasPrefix("applied ") && apply.stdout.hasSuffix("from u1: 2 upserted, 1 deleted\n"))
        let again = try cli.run("db", "apply", app.path, file, "--json")
        #expect(again.status == 0 && again.stdout.contains("\"status\":\"already-applied\""), "\(again.stdout)")
        #expect(try SQLiteConnection(path: app.path).query("SELECT id, n FROM items ORDER BY id") { "\($0.int64(0)):\($0.int64(1))" } == ["1:10", "3:3"])
        let status = try cli.run("db", "status", app.path)
        #expect(status.stdout.contains("  1 diff applied, the newest "), "\(status.stdout)")
        let restore = try cli.run("db", "restore", cli.home.appendingPathComponent("app.backup.sqlite").path, app.path)
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(try SQLiteConnection(path: app.path).query("SELECT id, n FROM items ORDER BY id") { "\($0.int64(0)):\($0.int64(1))" } == ["1:1", "2:2"])
        let same = try cli.run("db", "diff", old.path, old.path, "--sender", "u1", "-o", cli.home.path)
        #expect(same.status == 0 && same.stdout == "no differences: no diff written\n")
    }

    @Test("A refused diff exits 9 with its reason, the others still apply, and the database is otherwise unchanged")
    func refused() throws {
        let cli = try CLIHarness()
        let app = cli.home.appendingPathComponent("app.sqlite")
        try SQLiteConnection(path: app.path).execute(Self.schema)
        let good = try Self.diff(1, rows: 3, in: cli.home)
        let hostile = try DB.corpusCase("trigger")
        let result = try cli.run("db", "apply", app.path, hostile.path, good.path, "--json")
        #expect(result.status == 9)
        #expect(result.stdout.contains("\"reason\":\"unexpectedObject\"") && result.stdout.contains("\"status\":\"applied\""), "\(result.stdout)")
        let inspect = try cli.run("db", "inspect", try DB.corpusCase("not_sqlite").path)
        #expect(inspect.status == 9 && inspect.stderr.contains("it is not an SQLite database"), "\(inspect.stderr)")
    }

    @Test("diff --sign-key signs with a key from token keygen; apply --keys applies what the sender signed and refuses the rest with exit 9")
    func signed() throws {
        let cli = try CLIHarness()
        let old = cli.home.appendingPathComponent("old.sqlite"), new = cli.home.appendingPathComponent("new.sqlite")
        let app = cli.home.appendingPathComponent("app.sqlite")
        for url in [old, app] { try SQLiteConnection(path: url.path).execute(Self.schema + "INSERT INTO items VALUES (1, 'one', 1);") }
        try SQLiteConnection(path: new.path).execute(Self.schema + "INSERT INTO items VALUES (1, 'one', 10);")
        #expect(try cli.run("token", "keygen", "--key-id", "u1-2026").status == 0)
        let missing = try cli.run("db", "diff", old.path, new.path, "--sender", "u1", "--sign-key", "nope", "-o", cli.home.path)
        #expect(missing.status != 0 && missing.stderr.contains("buckia token keygen"), "\(missing.stderr)")
        let made = try cli.run("db", "diff", old.path, new.path, "--sender", "u1", "--sign-key", "u1-2026", "-o", cli.home.path)
        #expect(made.status == 0, "\(made.stderr)")
        let signed = made.stdout.trimmingCharacters(in: .newlines)
        #expect(try cli.run("db", "inspect", signed).stdout.contains("  signed with the key u1-2026"))
        let jwks = try cli.run("token", "jwks")
        #expect(jwks.status == 0, "\(jwks.stderr)")
        let keys = cli.home.appendingPathComponent("u1.jwk")
        try Data(jwks.stdout.utf8).write(to: keys)
        // An unsigned diff claiming u1, and u1's signed one: the first is refused, the second applies.
        let forged = try cli.run("db", "diff", old.path, new.path, "--sender", "u1", "-o", cli.home.appendingPathComponent("forged").path)
        try #require(forged.status == 0, "\(forged.stderr)")
        let forgedFile = forged.stdout.trimmingCharacters(in: .newlines)
        let apply = try cli.run("db", "apply", app.path, forgedFile, signed, "--keys", keys.path, "--accept", "u1", "--json")
        #expect(apply.status == 9, "\(apply.stdout) \(apply.stderr)")
        #expect(apply.stdout.contains("\"reason\":\"unsigned\"") && apply.stdout.contains("\"status\":\"applied\""), "\(apply.stdout)")
        #expect(try SQLiteConnection(path: app.path).query("SELECT n FROM items") { $0.int64(0) } == [10])
        // A sender --accept leaves out is refused too.
        let app2 = cli.home.appendingPathComponent("app2.sqlite")
        try SQLiteConnection(path: app2.path).execute(Self.schema)
        let refused = try cli.run("db", "apply", app2.path, signed, "--keys", keys.path, "--accept", "u2", "--json")
        #expect(refused.status == 9 && refused.stdout.contains("\"reason\":\"senderNotAccepted\""), "\(refused.stdout)")
        let usage = try cli.run("db", "apply", app2.path, signed, "--accept", "u1")
        #expect(usage.status == 2, "\(usage.stderr)")
    }

    @Test("send puts a diff in the user's inbound/ on a remote, never over an existing one")
    func send() throws {
        let cli = try CLIHarness()
        let bucket = cli.home.appendingPathComponent("bucket")
        try FileManager.default.createDirectory(at: bucket, withIntermediateDirectories: true)
        let file = try Self.diff(1, rows: 2, in: cli.home)
        let environment = ["BUCKIA_REMOTE_R_PROVIDER": "local", "BUCKIA_REMOTE_R_ROOT": bucket.path]
        let sent = try cli.run("db", "send", file.path, "r:users/u2", extraEnvironment: environment)
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(FileManager.default.fileExists(atPath: bucket.appendingPathComponent("users/u2/inbound/\(file.lastPathComponent)").path))
        let twice = try cli.run("db", "send", file.path, "r:users/u2", extraEnvironment: environment)
        #expect(twice.status == 1 && twice.stderr.contains("never overwritten"), "\(twice.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: bucket.path) == ["users"], "nothing of Buckia's left in the bucket folder")
    }

    /// Diff `number`: `rows` items upserted, the log row `number` inserted and the log row
    /// `number - 1` deleted. A diff applied a second time after a later one would bring its
    /// log row back, so the log shows whether each diff was applied once and in order.
    static func diff(_ number: Int, rows: Int, in folder: URL, base: Date = Date(timeIntervalSince1970: 1_790_000_000)) throws -> URL {
        var changes = DatabaseChanges()
        changes.define(TableDefinition("items", columns: [ColumnDefinition("id", type: "INTEGER", primaryKey: 1), ColumnDefinition("name", type: "TEXT", notNull: true), ColumnDefinition("n", type: "INTEGER")]))
        changes.define(TableDefinition("log", columns: [ColumnDefinition("diff", type: "INTEGER", primaryKey: 1)]))
        for row in 0..<rows {
            changes.upsert(["id": .integer(Int64(row)), "name": .text("item \(row) of diff \(number)"), "n": .integer(Int64(number))], into: "items")
        }
        changes.upsert(["diff": .integer(Int64(number))], into: "log")
        if number > 1 { changes.delete(["diff": .integer(Int64(number - 1))], from: "log") }
        let date = base.addingTimeInterval(TimeInterval(number))
        return try changes.write(to: folder, sender: "server", id: try KSUID(date: date), createdAt: date, database: nil)
    }

    @Test("Killed at 20 random moments of db apply over a batch, then rerun: every diff applied exactly once, in order, integrity ok")
    func killHarness() throws {
        let seed = ProcessInfo.processInfo.environment["BUCKIA_KILL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        var random = SplitMix64(seed: seed)
        let cli = try CLIHarness()
        let diffs = cli.home.appendingPathComponent("diffs")
        let count = 12
        let files = try (1...count).map { try Self.diff($0, rows: 3000, in: diffs) }.map(\.path)
        let base = cli.home.appendingPathComponent("base.sqlite")
        try SQLiteConnection(path: base.path).execute(Self.schema)
        // How much a whole run writes (its own count, /proc/PID/io), to spread the kills over
        // it: a kill lands at a point of the work, however busy the machine (a delay measured
        // on a calibration run put 11 of 20 kills after the end on a loaded one).
        let calibration = cli.home.appendingPathComponent("calibration.sqlite")
        try FileManager.default.copyItem(at: base, to: calibration)
        let full = try Spawned(CLIHarness.executable, ["db", "apply", calibration.path] + files, environment: cli.environment)
        var written = 0
        full.watch(until: {
            written = max(written, full.bytesWritten ?? 0)
            return false
        }, limit: .seconds(300))
        #expect(full.status == 0)
        #expect(written > 0, "no count of bytes written was seen")
        var midRun = 0
        var violations: [String] = []
        for kill in 0..<20 {
            let database = cli.home.appendingPathComponent("kill-\(kill).sqlite")
            try FileManager.default.copyItem(at: base, to: database)
            if kill % 2 == 0 { try SQLiteConnection(path: database.path).setJournalMode(.wal) }
            // Anywhere in the first nine tenths of what a whole run writes.
            let threshold = Int(random.next() % UInt64(max(1, written * 9 / 10)))
            let process = try Spawned(CLIHarness.executable, ["db", "apply", database.path] + files, environment: cli.environment)
            process.watch(until: { (process.bytesWritten ?? Int.max) >= threshold }, limit: .seconds(120))
            process.stop()
            let applied = try Self.appliedCount(database)
            if process.termination == .signalled(SIGKILL) && applied < count { midRun += 1 }
            violations += try Self.check(database, applied: applied, label: "after kill \(kill)")
            let rerun = try cli.runArray(["db", "apply", database.path] + files)
            if rerun.status != 0 { violations.append("rerun \(kill) exited \(rerun.status): \(rerun.stderr)") }
            violations += try Self.check(database, applied: count, label: "after rerun \(kill)")
        }
        print("db apply kill harness: 20 kills, \(midRun) mid-run, \(violations.count) violations (seed \(seed))")
        KillReport(
            component: "db apply", kills: 20, midRun: midRun, violations: violations.count, seed: seed,
            checks: "the database intact with whole diffs applied and recorded; the rerun applies each remaining diff once"
        ).write()
        #expect(midRun >= 10, "only \(midRun) kills landed mid-run")
        #expect(violations.isEmpty, "seed \(seed): \(violations.joined(separator: "; "))")
    }

    static func appliedCount(_ database: URL) throws -> Int {
        let connection = try SQLiteConnection(path: database.path)
        let exists = try connection.query("SELECT count(*) FROM sqlite_schema WHERE name = 'buckia_applied_changes'") { $0.int64(0) }.first ?? 0
        guard exists == 1 else { return 0 }
        return Int(try connection.query("SELECT count(*) FROM buckia_applied_changes") { $0.int64(0) }.first ?? 0)
    }

    /// The database after `applied` diffs: intact, the first `applied` recorded, the log holding
    /// only the last one's row, every item from it.
    static func check(_ database: URL, applied: Int, label: String) throws -> [String] {
        let connection = try SQLiteConnection(path: database.path)
        var problems: [String] = []
        let integrity = try connection.query("PRAGMA integrity_check") { $0.string(0) ?? "" }
        if integrity != ["ok"] { problems.append("\(label): integrity_check \(integrity)") }
        let log = try connection.query("SELECT diff FROM log ORDER BY diff") { Int($0.int64(0)) }
        if log != (applied == 0 ? [] : [applied]) { problems.append("\(label): \(applied) applied but the log holds \(log)") }
        let items = try connection.query("SELECT count(*), coalesce(min(n), 0), coalesce(max(n), 0) FROM items") { [Int($0.int64(0)), Int($0.int64(1)), Int($0.int64(2))] }.first ?? []
        let expected = applied == 0 ? [0, 0, 0] : [3000, applied, applied]
        if items != expected { problems.append("\(label): items \(items), expected \(expected)") }
        return problems
    }
}

/// The diff corpus and the database helpers the CLI tests borrow.
enum DB {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/Diffs")

    static func corpusCase(_ name: String) throws -> URL {
        let folder = corpus.appendingPathComponent(name)
        let file = try FileManager.default.contentsOfDirectory(atPath: folder.path).first { $0.hasSuffix(".sqlite") }
        return folder.appendingPathComponent(try #require(file))
    }
}
