#if os(macOS) || os(Linux)
import Buckia
import Foundation

/// Parses the command line and runs the chosen sections.
enum BenchCommand {
    static let usage = """
        Usage: buckia-bench engines [--sizes N,N,…] [--repeat R] [--value-bytes B] [--engines a,b]
               buckia-bench upload-reads --endpoint URL --bucket NAME [--sizes-mib N,N,…]
               buckia-bench checksums [--total-mib M] [--value-bytes B,B,…] [--repeat R]
               buckia-bench crypto [--total-mib M] [--repeat R]
               buckia-bench http [--big-mib M] [--small-count N] [--repeat R] [--workloads big,small] [--clients curl,libcurl,urlsession]
               buckia-bench cancel-storm --url URL [--transport libcurl|urlSession] [--rounds N]
               buckia-bench bunny-list [--folders F] [--per-folder N] [--repeat R] [--latency-ms MS]
               buckia-bench chunks [--size-mib M] [--change-mib C] [--average BYTES] [--depth D] [--folder DIR] [--compress]
               buckia-bench database [--size-mib M] [--rows N] [--repeat R] [--folder DIR] [--sections backup,apply] [--writers normal,full] [--no-peers]
               buckia-bench catalog [--rows N] [--repeat R]
               buckia-bench cache [--files N] [--size-kib K] [--repeat R] [--concurrency C]

        Measures each key-value engine and, in the same run, the limits: raw SQLite C calls doing
        the same statements and raw open/write/close of one file per value. Every run uses a fresh
        folder; the table reports the median of R runs and the ratio to the limit.

        upload-reads uploads files to an S3 endpoint (credentials bench/bench, as
        Tools/bench/bench-upload-reads.sh sets up on moto) with and without a known MD5, and reports the
        bytes the process read per byte uploaded.

        checksums measures CRC-32C (one stream, three streams, table) against reading the bytes.

        crypto measures SHA-256, MD5, SHA-1, AES-256-GCM, HMAC-SHA256 and scrypt through the APIs
        Buckia calls, beside libcrypto called directly.

        http starts nginx (WebDAV PUT) on 127.0.0.1 and compares Buckia's HTTP client, over
        libcurl and over URLSession, with the curl tool: one big PUT and GET, and N 10 KiB PUTs
        and GETs with 16 in flight.

        bunny-list starts the Bunny emulator, stores F×N small objects in F folders, and times a
        recursive listing through the Bunny provider at read-ahead 1, 4 and 8 beside the raw
        folder GETs at the same widths, then counts the requests of a no-op sync resync. With
        --latency-ms the emulator answers each request that much later, as a network would.

        chunks stores an M MiB random file as FastCDC chunks in a local chunk store and compares
        it with SHA-256 over the same bytes and a plain synced copy, then overwrites C MiB in the
        middle and stores it again, reporting the new chunk data and the process's peak RSS.

        database backs up an M MiB database in WAL mode while a writer commits continuously
        (Buckia's online backup and VACUUM INTO beside the sqlite3 shell's .backup and VACUUM
        INTO), reporting each backup's time and the writer's longest commit; then applies an
        N-row diff beside raw SQLite upserting the same rows in one transaction.

        catalog caches N file records in a new file catalog (the insert path), caches them again
        changed (the update path) and fetches them newest first, beside raw SQLite running the
        same statements through the C API and Python's sqlite3 module upserting a row at a
        time with executemany; then times a commit to a live query's reader.

        cache fetches N files of K KiB from nginx on 127.0.0.1 through the resource cache's
        downloader, with curl --parallel, and with URLSession and a disk URLCache, C at a time;
        then times a hit from the memory tier, through fetch, from the disk tier, and reading
        the cached file directly.
        """

    static func main(_ arguments: [String]) async -> Int32 {
        if arguments.first == "upload-reads" { return await uploadReads(Array(arguments.dropFirst())) }
        if arguments.first == "checksums" { return checksums(Array(arguments.dropFirst())) }
        if arguments.first == "crypto" {
            do {
                return try crypto(Array(arguments.dropFirst()))
            } catch {
                FileHandle.standardError.write(Data("buckia-bench crypto: \(error)\n".utf8))
                return 1
            }
        }
        if arguments.first == "http" { return await http(Array(arguments.dropFirst())) }
        if arguments.first == "cancel-storm" { return await CancelStorm.run(Array(arguments.dropFirst())) }
        if arguments.first == "bunny-list" { return await BunnyListBench.run(Array(arguments.dropFirst())) }
        if arguments.first == "chunks" { return await ChunkBench.run(Array(arguments.dropFirst())) }
        if arguments.first == "database" { return await DatabaseBench.run(Array(arguments.dropFirst())) }
        if arguments.first == "catalog" { return await CatalogBench.run(Array(arguments.dropFirst())) }
        if arguments.first == "cache" { return await CacheBench.run(Array(arguments.dropFirst())) }
        guard arguments.first == "engines" else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return arguments.first == "--help" ? 0 : 2
        }
        var sizes = [1_000, 10_000, 100_000]
        var repeats = 3
        var valueBytes = 1024
        var engines = EngineRegistry.builtIn.registeredTypes.filter { $0 != .memory }
        var index = 1
        while index < arguments.count {
            let name = arguments[index]
            guard index + 1 < arguments.count else {
                FileHandle.standardError.write(Data("buckia-bench: \(name) needs a value\n".utf8))
                return 2
            }
            let value = arguments[index + 1]
            switch name {
            case "--sizes": sizes = value.split(separator: ",").compactMap { Int($0) }
            case "--repeat": repeats = max(1, Int(value) ?? 3)
            case "--value-bytes": valueBytes = max(1, Int(value) ?? 1024)
            case "--engines": engines = value.split(separator: ",").map { EngineType(rawValue: String($0)) }
            default:
                FileHandle.standardError.write(Data("buckia-bench: unknown option \(name)\n\(usage)\n".utf8))
                return 2
            }
            index += 2
        }
        do {
            let bench = EngineBench(sizes: sizes, repeats: repeats, valueBytes: valueBytes, engines: engines)
            print(try await bench.run())
            return 0
        } catch {
            FileHandle.standardError.write(Data("buckia-bench: \(error)\n".utf8))
            return 1
        }
    }
}

extension BenchCommand {
    static func uploadReads(_ arguments: [String]) async -> Int32 {
        var values: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count {
            values[arguments[index]] = arguments[index + 1]
            index += 2
        }
        guard index == arguments.count, let endpoint = values["--endpoint"].flatMap(URL.init(string:)), let bucket = values["--bucket"] else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return 2
        }
        let sizes = (values["--sizes-mib"] ?? "32,96").split(separator: ",").compactMap { Int($0) }.map { $0 * 1_048_576 }
        do {
            print(try await UploadReadsBench(endpoint: endpoint, bucket: bucket, sizes: sizes).run())
            return 0
        } catch {
            FileHandle.standardError.write(Data("buckia-bench: \(error)\n".utf8))
            return 1
        }
    }
}

/// Timing helpers.
enum Stopwatch {
    /// Seconds taken by `body`.
    static func time(_ body: () async throws -> Void) async rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        let elapsed = clock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Seconds taken by synchronous `body`.
    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        let elapsed = clock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// The median of `values`.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// A duration for a table: µs, ms or s with three significant figures.
    static func format(_ seconds: Double) -> String {
        switch seconds {
        case ..<0.001: String(format: "%.1f µs", seconds * 1e6)
        case ..<1: String(format: "%.2f ms", seconds * 1e3)
        default: String(format: "%.2f s", seconds)
        }
    }
}

/// A fresh scratch folder per measurement, under one root removed at the end.
struct Scratch {
    let root: URL

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    func fresh(_ name: String) throws -> URL {
        let url = root.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func remove() { try? FileManager.default.removeItem(at: root) }
}

extension BenchCommand {
    static func http(_ arguments: [String]) async -> Int32 {
        var bench = HTTPBench()
        var index = 0
        while index + 1 < arguments.count {
            let value = Int(arguments[index + 1]) ?? 0
            switch arguments[index] {
            case "--clients": bench.clients = Set(arguments[index + 1].split(separator: ",").map(String.init))
            case "--workloads": bench.workloads = Set(arguments[index + 1].split(separator: ",").map(String.init))
            case "--big-mib": bench.bigMiB = max(1, value)
            case "--small-count": bench.smallCount = max(1, value)
            case "--repeat": bench.repeats = max(1, value)
            default:
                FileHandle.standardError.write(Data("buckia-bench: unknown option \(arguments[index])\n\(usage)\n".utf8))
                return 2
            }
            index += 2
        }
        guard index == arguments.count else {
            FileHandle.standardError.write(Data("buckia-bench: \(arguments[index]) needs a value\n".utf8))
            return 2
        }
        do {
            print(try await bench.run())
            return 0
        } catch {
            FileHandle.standardError.write(Data("buckia-bench: \(error)\n".utf8))
            return 1
        }
    }
}
#endif
