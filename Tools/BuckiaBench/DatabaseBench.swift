#if os(macOS) || os(Linux)
import Buckia
import BuckiaDatabase
import BuckiaSQLite
import CSQLite
import Foundation

/// `database`: the two measurements issue 24 asks for, each beside its limit and its peer in
/// the same run.
///
/// 1. Backing up a database of `--size-mib` MiB (WAL mode) while a writer commits small
///    transactions continuously: Buckia's two methods beside the `sqlite3` shell's `.backup`
///    and `VACUUM INTO`; for each, the backup's time and the writer's longest commit while it
///    ran (a stall the app would feel).
/// 2. Applying a diff of `--rows` rows, into an empty table and over existing rows, beside raw
///    SQLite upserting the same rows in one transaction through the C API.
enum DatabaseBench {
    static func run(_ arguments: [String]) async -> Int32 {
        var sizeMiB = 1024
        var rows = 100_000
        var repeats = 3
        var folder: String?
        var sections: Set<String> = ["backup", "apply"]
        var writers: [SQLiteConnection.Synchronous] = [.normal, .full]
        var peers = true
        var index = 0
        while index < arguments.count {
            let value = index + 1 < arguments.count ? arguments[index + 1] : ""
            switch arguments[index] {
            case "--size-mib": sizeMiB = max(1, Int(value) ?? sizeMiB)
            case "--rows": rows = max(1, Int(value) ?? rows)
            case "--repeat": repeats = max(1, Int(value) ?? repeats)
            case "--folder": folder = value
            case "--sections": sections = Set(value.split(separator: ",").map(String.init))
            case "--writers": writers = value.split(separator: ",").compactMap { SQLiteConnection.Synchronous(rawValue: $0.uppercased()) }
            case "--no-peers":
                peers = false
                index -= 1
            default:
                print("Unknown option \(arguments[index])\n\(BenchCommand.usage)")
                return 2
            }
            index += 2
        }
        let base = URL(fileURLWithPath: folder ?? FileManager.default.temporaryDirectory.path).appendingPathComponent("buckia-db-bench-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: base) }
            if sections.contains("backup") { try backups(sizeMiB: sizeMiB, repeats: repeats, folder: base, writers: writers, peers: peers) }
            if sections.contains("apply") { try apply(rows: rows, repeats: repeats, folder: base) }
            return 0
        } catch {
            print("database: \(error)")
            return 1
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    // MARK: Backups under a writer

    final class Writer: @unchecked Sendable {
        let stop = Locked(false)
        let measuring = Locked(false)
        /// Longest commit (ns) and commits counted while `measuring`.
        let longest = Locked(0)
        let commits = Locked(0)
        private var thread: Thread?

        func start(_ path: String, synchronous: SQLiteConnection.Synchronous) {
            let thread = Thread { [self] in
                do {
                    let connection = try SQLiteConnection(path: path, busyTimeout: .seconds(60))
                    try connection.setSynchronous(synchronous)
                    var n: Int64 = 0
                    let clock = ContinuousClock()
                    while !stop.withLock({ $0 }) {
                        n += 1
                        let started = clock.now
                        try connection.transaction {
                            try connection.run("UPDATE items SET n = n + 1, payload = randomblob(4000) WHERE id = ?", [.integer(n % 1000)])
                        }
                        if measuring.withLock({ $0 }) {
                            let elapsed = clock.now - started
                            let nanoseconds = Int(elapsed.components.seconds) * 1_000_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000)
                            longest.withLock { $0 = max($0, nanoseconds) }
                            commits.withLock { $0 += 1 }
                        }
                    }
                } catch {
                    print("database: the writer failed: \(error)")
                }
            }
            self.thread = thread
            thread.start()
        }

        func finish() {
            stop.withLock { $0 = true }
            while thread?.isFinished == false { usleep(1000) }
        }
    }

    static func backups(sizeMiB: Int, repeats: Int, folder: URL, writers: [SQLiteConnection.Synchronous], peers: Bool) throws {
        let database = folder.appendingPathComponent("app.sqlite")
        let connection = try SQLiteConnection(path: database.path)
        try connection.setJournalMode(.wal)
        try connection.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, payload BLOB NOT NULL)")
        let rows = sizeMiB * 256  // 4 KiB each
        try connection.transaction {
            try connection.run("WITH RECURSIVE i(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM i WHERE x < ?) INSERT INTO items SELECT x, 0, randomblob(4000) FROM i", [.integer(Int64(rows - 1))])
        }
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let size = (try FileManager.default.attributesOfItem(atPath: database.path)[.size] as? Int64) ?? 0
        let hasShell = peers && FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3")
        var methods: [(String, (URL) throws -> Void)] = [
            ("buckia online backup, paced (16 MiB steps in one snapshot, each flushed)", { destination in try DatabaseBackup.write(from: database, to: destination, method: .onlineBackup) }),
            ("buckia online backup, one step, one fsync", { destination in try DatabaseBackup.write(from: database, to: destination, method: .onlineBackup, paced: false) }),
            ("buckia VACUUM INTO", { destination in try DatabaseBackup.write(from: database, to: destination, method: .vacuumInto) }),
        ]
        if hasShell {
            methods.append(("sqlite3 shell .backup", { destination in try shell(database, ".backup '\(destination.path)'", limit: .seconds(120)) }))
            methods.append(("sqlite3 shell VACUUM INTO (not synced)", { destination in try shell(database, "VACUUM INTO '\(destination.path)'", limit: .seconds(120)) }))
        } else {
            print("  (no sqlite3 shell at /usr/bin/sqlite3: its rows are left out; apt install sqlite3)")
        }
        for synchronous in writers {
            print("")
            print("database backup: \(size >> 20) MiB in WAL mode, a writer committing one 4 KB update per transaction with synchronous=\(synchronous.rawValue) throughout; the writer's longest commit is taken from the backup's start to 2 s after its end (the checkpoint after a long snapshot included); median of \(repeats)")
            print("| method | time (s) | MiB/s | writer's longest commit (ms) | commits, backup + 2 s |")
            print("|---|---|---|---|---|")
            do {
                let writer = Writer()
                writer.start(database.path, synchronous: synchronous)
                usleep(300_000)
                writer.measuring.withLock { $0 = true }
                usleep(4_000_000)
                writer.measuring.withLock { $0 = false }
                writer.finish()
                print("| (no backup, 4 s) | – | – | \(String(format: "%.1f", Double(writer.longest.withLock { $0 }) / 1e6)) | \(writer.commits.withLock { $0 }) |")
            }
            for (name, method) in methods {
                var times: [Double] = [], stalls: [Double] = [], counts: [Double] = []
                for run in 0..<repeats {
                    let destination = folder.appendingPathComponent("backup-\(run).sqlite")
                    try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    try DirectoryHandle(path: folder.path).syncFileSystem()
                    let writer = Writer()
                    writer.start(database.path, synchronous: synchronous)
                    usleep(300_000)
                    writer.measuring.withLock { $0 = true }
                    let clock = ContinuousClock()
                    let started = clock.now
                    do {
                        try method(destination)
                    } catch let failure as BenchFailure {
                        // The shell's stepped backup restarts on every write: under this writer it
                        // may never finish, which is a result, not a failure of the bench.
                        writer.finish()
                        print("| \(name) | did not finish in 120 s (\(failure.description.prefix(40))…) | – | – | – |")
                        times = []
                        break
                    } catch {
                        writer.finish()
                        throw error
                    }
                    let elapsed = seconds(clock.now - started)
                    usleep(2_000_000)
                    writer.measuring.withLock { $0 = false }
                    writer.finish()
                    times.append(elapsed)
                    stalls.append(Double(writer.longest.withLock { $0 }) / 1e6)
                    counts.append(Double(writer.commits.withLock { $0 }))
                    let check = try SQLiteConnection(path: destination.path, mode: .readOnly)
                    guard try check.quickCheck().isEmpty else { throw BenchFailure("\(name) wrote a damaged copy") }
                    try FileManager.default.removeItem(at: destination)
                }
                guard !times.isEmpty else { continue }
                let time = median(times)
                print("| \(name) | \(String(format: "%.2f", time)) | \(String(format: "%.0f", Double(size >> 20) / time)) | \(String(format: "%.1f", median(stalls))) | \(Int(median(counts))) |")
            }
        }
    }

    /// Runs the sqlite3 shell on `database` with `command`, killed after `limit`.
    static func shell(_ database: URL, _ command: String, limit: Duration) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [database.path, command]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + limit
        while process.isRunning {
            if ContinuousClock.now > deadline {
                // SIGKILL: a child of this async process inherits a blocked SIGTERM.
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw BenchFailure("sqlite3 \(command) did not finish in \(limit) under the writer")
            }
            usleep(2_000)
        }
        guard process.terminationStatus == 0 else { throw BenchFailure("sqlite3 \(command) exited \(process.terminationStatus)") }
    }

    // MARK: Applying a diff

    static func apply(rows: Int, repeats: Int, folder: URL) throws {
        let definition = TableDefinition("items", columns: [
            ColumnDefinition("id", type: "INTEGER", primaryKey: 1), ColumnDefinition("name", type: "TEXT", notNull: true),
            ColumnDefinition("n", type: "INTEGER"), ColumnDefinition("payload", type: "BLOB"),
        ])
        var random = SystemRandomNumberGenerator()
        let values: [[SQLiteValue]] = (0..<rows).map { row in
            [.integer(Int64(row)), .text("item number \(row)"), .integer(Int64.random(in: 0...1_000_000, using: &random)), .blob(Data((0..<100).map { _ in UInt8.random(in: 0...255, using: &random) }))]
        }
        let date = Date()
        let writer = try DiffWriter(directory: folder, sender: "bench", id: try KSUID(date: date), createdAt: date)
        let table = try writer.addTable(definition)
        for row in values { try writer.upsert(row, into: table) }
        let diff = try writer.finish()
        let diffSize = (try FileManager.default.attributesOfItem(atPath: diff.path)[.size] as? Int64) ?? 0
        print("")
        print("database apply: a diff of \(rows) rows (id, name, n, a 100-byte blob), \(diffSize >> 20) MiB, into a database in rollback-journal mode with synchronous=FULL (SQLite's defaults); median of \(repeats)")
        var checks: [Double] = []
        for _ in 0..<repeats {
            let clock = ContinuousClock()
            let started = clock.now
            _ = try DiffSummary(contentsOf: diff)
            checks.append(seconds(clock.now - started))
        }
        print("reading and checking the diff alone (size, header, quick_check, schema, SHA-256 of the content): \(String(format: "%.3f", median(checks))) s")
        print("| case | buckia apply (s) | raw SQLite upserts (s) | ratio |")
        print("|---|---|---|---|")
        let schema = "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER, payload BLOB)"
        for existing in [false, true] {
            var buckia: [Double] = [], raw: [Double] = []
            for run in 0..<repeats {
                for side in ["buckia", "raw"] {
                    let path = folder.appendingPathComponent("apply-\(side)-\(run)-\(existing).sqlite").path
                    let connection = try SQLiteConnection(path: path)
                    try connection.execute(schema)
                    if existing {
                        try connection.transaction {
                            for row in values { try connection.run("INSERT INTO items VALUES (?, 'old', 0, NULL)", [row[0]]) }
                        }
                    }
                    try DirectoryHandle(path: folder.path).syncFileSystem()
                    let clock = ContinuousClock()
                    let started = clock.now
                    if side == "buckia" {
                        _ = try DiffApplier.apply(diff, to: connection, options: ApplyOptions(), now: Date())
                        buckia.append(seconds(clock.now - started))
                    } else {
                        try rawUpsert(path: path, values: values)
                        raw.append(seconds(clock.now - started))
                    }
                    let count = try connection.query("SELECT count(*) FROM items WHERE name != 'old'") { $0.int64(0) }.first ?? 0
                    guard count == Int64(rows) else { throw BenchFailure("\(side) left \(count) of \(rows) rows") }
                }
            }
            let (b, r) = (median(buckia), median(raw))
            print("| \(existing ? "over \(rows) existing rows" : "into an empty table") | \(String(format: "%.3f", b)) | \(String(format: "%.3f", r)) | \(String(format: "%.2f", b / r))× |")
        }
    }

    /// The limit: one transaction of INSERT … ON CONFLICT DO UPDATE through the C API, values
    /// already in memory.
    static func rawUpsert(path: String, values: [[SQLiteValue]]) throws {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchFailure("raw open failed") }
        defer { sqlite3_close(db) }
        guard sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else { throw BenchFailure("raw begin failed") }
        var statement: OpaquePointer?
        let sql = "INSERT INTO items (id, name, n, payload) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (id) DO UPDATE SET name = excluded.name, n = excluded.n, payload = excluded.payload"
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw BenchFailure("raw prepare failed") }
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for row in values {
            guard case .integer(let id) = row[0], case .text(let name) = row[1], case .integer(let n) = row[2], case .blob(let payload) = row[3] else { continue }
            sqlite3_bind_int64(statement, 1, id)
            sqlite3_bind_text(statement, 2, name, -1, transient)
            sqlite3_bind_int64(statement, 3, n)
            _ = payload.withUnsafeBytes { sqlite3_bind_blob(statement, 4, $0.baseAddress, Int32($0.count), transient) }
            guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchFailure("raw upsert failed") }
            sqlite3_reset(statement)
        }
        guard sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw BenchFailure("raw commit failed") }
    }
}
#endif
