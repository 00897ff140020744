#if os(macOS) || os(Linux)
import Buckia
import BuckiaCatalog
import CSQLite
import Foundation

/// `buckia-bench catalog`: the file catalog beside raw SQLite running the same statements
/// through the C API, and beside Python's sqlite3 module doing the same work its usual way
/// (one upsert a row with `executemany`), in one run; then the time from a commit to a live
/// query's reader holding the new list.
enum CatalogBench {
    static func run(_ arguments: [String]) async -> Int32 {
        var rows = 100_000
        var repeats = 3
        var index = 0
        while index + 1 < arguments.count {
            switch arguments[index] {
            case "--rows": rows = max(1, Int(arguments[index + 1]) ?? rows)
            case "--repeat": repeats = max(1, Int(arguments[index + 1]) ?? repeats)
            default:
                FileHandle.standardError.write(Data("buckia-bench catalog: unknown option \(arguments[index])\n".utf8))
                return 2
            }
            index += 2
        }
        let records = (0..<rows).map { n in
            FileRecord(
                fileId: "file-\(n)", key: "media/\(n % 1000)/\(n).mp4", title: "Talk number \(n)", authorName: "Speaker \(n % 97)",
                publishDate: Date(timeIntervalSince1970: 1_600_000_000 + Double((n &* 7919) % rows) * 60), size: Int64(n) * 1024,
                url: URL(string: "https://cdn.example/media/\(n).mp4"))
        }
        let updated = records.map { record -> FileRecord in
            var record = record
            record.title = (record.title ?? "") + " (revised)"
            return record
        }
        var results: [String: [String: [Double]]] = [:]
        func note(_ who: String, _ what: String, _ seconds: Double) { results[who, default: [:]][what, default: []].append(seconds) }
        do {
            for _ in 0..<repeats {
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-catalog-bench-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { removeFolder(folder) }
                let catalog = try FileCatalogClient.live(path: folder.appendingPathComponent("buckia.sqlite").path)
                note("buckia", "insert", try await Stopwatch.time { try await catalog.cacheFiles(records) })
                note("buckia", "update", try await Stopwatch.time { try await catalog.cacheFiles(updated) })
                note("buckia", "fetch newest first", try await Stopwatch.time {
                    guard try await catalog.getFiles().count == rows else { throw BenchFailure("buckia fetch is short") }
                })
                for (what, seconds) in try raw(records, updated, path: folder.appendingPathComponent("raw.sqlite").path) { note("raw", what, seconds) }
                for (what, seconds) in try python(rows: rows, path: folder.appendingPathComponent("python.sqlite").path) { note("python", what, seconds) }
            }
            let latency = try await observerLatency(records: Array(records.prefix(1000)), samples: 20)
            let latencyFull = try await observerLatency(records: records, samples: 5)
            print("## File catalog: \(rows) records, median of \(repeats) runs (release build)\n")
            print("| operation | Buckia | raw SQLite, C API, same statements | ÷ | Python sqlite3, executemany | ÷ |")
            print("|---|---|---|---|---|---|")
            for what in ["insert", "update", "fetch newest first"] {
                let mine = median(results["buckia"]?[what] ?? [])
                let raw = median(results["raw"]?[what] ?? [])
                let python = results["python"]?[what].map(median)
                let peer = python.map { String(format: "%.3f s | %.2f×", $0, mine / $0) } ?? "— | —"
                print(String(format: "| %@ | %.3f s | %.3f s | %.2f× | %@ |", what, mine, raw, mine / raw, peer))
            }
            print(String(format: "\nFrom a commit (one cacheFile) to a live query's reader holding the new list: median %.2f ms with 1,000 records, %.1f ms with %d.", latency * 1000, latencyFull * 1000, rows))
            return 0
        } catch {
            FileHandle.standardError.write(Data("buckia-bench catalog: \(error)\n".utf8))
            return 1
        }
    }

    /// Removes a run's folder; a failure is reported, not hidden (the run's figures stand).
    static func removeFolder(_ folder: URL) {
        do {
            try FileManager.default.removeItem(at: folder)
        } catch {
            FileHandle.standardError.write(Data("buckia-bench catalog: \(folder.path) was left behind: \(error)\n".utf8))
        }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }

    /// The median time from calling `cacheFile` to the reader receiving the list with it.
    static func observerLatency(records: [FileRecord], samples: Int) async throws -> Double {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-catalog-latency-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { removeFolder(folder) }
        let catalog = try FileCatalogClient.live(path: folder.appendingPathComponent("c.sqlite").path)
        try await catalog.cacheFiles(records)
        var updates = catalog.observeFiles().makeAsyncIterator()
        _ = try await updates.next()
        var times: [Double] = []
        for n in 0..<samples {
            let record = FileRecord(fileId: "latency-\(n)", key: "latency/\(n)", publishDate: Date())
            let clock = ContinuousClock()
            let start = clock.now
            try await catalog.cacheFile(record)
            guard let list = try await updates.next(), list.contains(where: { $0.fileId == record.fileId }) else {
                throw BenchFailure("the live query missed a change")
            }
            let elapsed = clock.now - start
            times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        return median(times)
    }

    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// The same schema, the same multi-row upserts in one transaction each, and the same
    /// newest-first query, through the C API; the rows are read into Swift strings as any
    /// caller needs them.
    static func raw(_ records: [FileRecord], _ updated: [FileRecord], path: String) throws -> [String: Double] {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let db else {
            throw BenchFailure("raw open failed")
        }
        defer { sqlite3_close_v2(db) }
        func exec(_ sql: String) throws {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchFailure("raw exec failed: \(String(cString: sqlite3_errmsg(db)))") }
        }
        try exec("PRAGMA journal_mode = WAL")
        try exec("PRAGMA synchronous = NORMAL")
        try exec("BEGIN; " + FileCatalogLive.migrations.joined(separator: "\n") + "; COMMIT")
        try exec("BEGIN; " + FileCatalogLive.searchIndex + "; COMMIT")
        func upsert(_ batch: [FileRecord]) throws {
            try exec("BEGIN IMMEDIATE")
            var statements: [Int: OpaquePointer] = [:]
            defer { for statement in statements.values { sqlite3_finalize(statement) } }
            var start = 0
            while start < batch.count {
                let chunk = batch[start..<min(start + FileCatalogLive.rowsPerStatement, batch.count)]
                start += chunk.count
                let statement: OpaquePointer
                if let prepared = statements[chunk.count] {
                    statement = prepared
                } else {
                    var made: OpaquePointer?
                    guard sqlite3_prepare_v2(db, FileCatalogLive.upsertStatement(rows: chunk.count), -1, &made, nil) == SQLITE_OK, let made else {
                        throw BenchFailure("raw prepare failed")
                    }
                    statements[chunk.count] = made
                    statement = made
                }
                var column: Int32 = 1
                for record in chunk {
                    sqlite3_bind_text(statement, column, record.fileId, -1, transient)
                    sqlite3_bind_text(statement, column + 1, record.key, -1, transient)
                    sqlite3_bind_text(statement, column + 2, record.title ?? "", -1, transient)
                    sqlite3_bind_text(statement, column + 3, record.authorName ?? "", -1, transient)
                    sqlite3_bind_double(statement, column + 4, record.publishDate?.timeIntervalSince1970 ?? 0)
                    sqlite3_bind_int64(statement, column + 5, record.size ?? 0)
                    sqlite3_bind_text(statement, column + 6, record.url?.absoluteString ?? "", -1, transient)
                    column += 7
                }
                guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchFailure("raw upsert failed: \(String(cString: sqlite3_errmsg(db)))") }
                sqlite3_reset(statement)
            }
            try exec("COMMIT")
        }
        var times: [String: Double] = [:]
        times["insert"] = try Stopwatch.seconds { try upsert(records) }
        times["update"] = try Stopwatch.seconds { try upsert(updated) }
        times["fetch newest first"] = try Stopwatch.seconds {
            var statement: OpaquePointer?
            let sql = "SELECT \(FileCatalogLive.columns) FROM catalog_files ORDER BY \(FileQuery.Order.newestFirst.sql)"
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw BenchFailure("raw prepare failed") }
            defer { sqlite3_finalize(statement) }
            var rows: [(String, String, String, String, Double, Int64, String)] = []
            func text(_ column: Int32) -> String {
                guard let pointer = sqlite3_column_text(statement, column) else { return "" }
                return String(decoding: UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
            }
            while sqlite3_step(statement) == SQLITE_ROW {
                rows.append((text(0), text(1), text(2), text(3), sqlite3_column_double(statement, 4), sqlite3_column_int64(statement, 5), text(6)))
            }
            guard rows.count == records.count else { throw BenchFailure("raw fetch is short") }
        }
        return times
    }

    /// Python's sqlite3 module, the same schema, one upsert statement a row with executemany
    /// in one transaction, the same query; nil when there is no python3.
    static func python(rows: Int, path: String) throws -> [String: Double] {
        let script = """
            import sqlite3, sys, time, json
            rows, path = int(sys.argv[1]), sys.argv[2]
            schema, search = sys.stdin.read().split("\\n--search--\\n")
            db = sqlite3.connect(path, isolation_level=None)
            db.execute("PRAGMA journal_mode = WAL"); db.execute("PRAGMA synchronous = NORMAL")
            db.executescript("BEGIN;" + schema + ";COMMIT;"); db.executescript("BEGIN;" + search + ";COMMIT;")
            def records(suffix):
                return [("file-%d" % n, "media/%d/%d.mp4" % (n % 1000, n), "Talk number %d%s" % (n, suffix), "Speaker %d" % (n % 97),
                         1600000000 + ((n * 7919) % rows) * 60.0, n * 1024, "https://cdn.example/media/%d.mp4" % n) for n in range(rows)]
            sql = ("INSERT INTO catalog_files (file_id, key, title, author_name, publish_date, size, url) VALUES (?, ?, ?, ?, ?, ?, ?) "
                   "ON CONFLICT (file_id) DO UPDATE SET key = excluded.key, title = excluded.title, author_name = excluded.author_name, "
                   "publish_date = excluded.publish_date, size = excluded.size, url = excluded.url")
            times = {}
            for name, suffix in [("insert", ""), ("update", " (revised)")]:
                batch = records(suffix)
                start = time.perf_counter()
                db.execute("BEGIN IMMEDIATE"); db.executemany(sql, batch); db.execute("COMMIT")
                times[name] = time.perf_counter() - start
            start = time.perf_counter()
            fetched = db.execute("SELECT file_id, key, title, author_name, publish_date, size, url FROM catalog_files ORDER BY publish_date IS NULL, publish_date DESC, key").fetchall()
            times["fetch newest first"] = time.perf_counter() - start
            assert len(fetched) == rows
            print(json.dumps(times))
            """
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { return [:] }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, String(rows), path]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data((FileCatalogLive.migrations.joined(separator: "\n") + "\n--search--\n" + FileCatalogLive.searchIndex).utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let times = try JSONSerialization.jsonObject(with: data) as? [String: Double] else {
            throw BenchFailure("the Python peer failed")
        }
        return times
    }
}
#endif
