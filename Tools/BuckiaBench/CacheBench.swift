#if os(macOS) || os(Linux)
import Buckia
import BuckiaHTTP
import BuckiaTestSupport
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `buckia-bench cache`: the resource cache beside what a user would otherwise use, in one
/// run against Debian's nginx on 127.0.0.1: a cold fetch of N files by Buckia's downloader,
/// by `curl --parallel` (the limit of fetching them at all) and by URLSession with a disk
/// `URLCache` (FoundationNetworking, the peer a Swift developer on Linux reaches for); then the
/// cost of a hit from the memory tier and from the disk tier beside reading the file directly.
enum CacheBench {
    static func run(_ arguments: [String]) async -> Int32 {
        var files = 1000
        var kib = 100
        var repeats = 3
        var concurrency = 4
        var index = 0
        while index + 1 < arguments.count {
            let value = Int(arguments[index + 1])
            switch arguments[index] {
            case "--files": files = max(1, value ?? files)
            case "--size-kib": kib = max(1, value ?? kib)
            case "--repeat": repeats = max(1, value ?? repeats)
            case "--concurrency": concurrency = max(1, value ?? concurrency)
            default:
                FileHandle.standardError.write(Data("buckia-bench cache: unknown option \(arguments[index])\n".utf8))
                return 2
            }
            index += 2
        }
        do {
            print(try await measure(files: files, bytes: kib * 1024, repeats: repeats, concurrency: concurrency))
            return 0
        } catch {
            FileHandle.standardError.write(Data("buckia-bench cache: \(error)\n".utf8))
            return 1
        }
    }

    static func measure(files: Int, bytes: Int, repeats: Int, concurrency: Int) async throws -> String {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-cache-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { CatalogBench.removeFolder(work) }
        let server = try NginxServer.start(in: work, tuned: true)
        defer { server.stop() }
        // Files modified 30 days ago: nginx sends no Cache-Control, so freshness is RFC 9111's
        // heuristic, a tenth of that age capped at a day, the same for every client.
        var random = RandomBytes(seed: 42)
        var buffer = [UInt8](repeating: 0, count: bytes)
        let old = Date().addingTimeInterval(-30 * 86_400)
        for n in 0..<files {
            random.fill(&buffer)
            let file = work.appendingPathComponent("data/f\(n).bin")
            try Data(buffer).write(to: file)
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: file.path)
        }
        let urls = try (0..<files).map { n -> URL in
            guard let url = URL(string: "http://127.0.0.1:\(server.port)/f\(n).bin") else { throw BenchFailure("no URL") }
            return url
        }
        var results: [String: [Double]] = [:]
        func note(_ what: String, _ seconds: Double) { results[what, default: []].append(seconds) }
        var hitSeconds: [String: [Double]] = [:]
        for round in 0..<repeats {
            let folder = work.appendingPathComponent("round-\(round)")
            // Buckia, cold.
            var configuration = ResourceCacheConfiguration()
            configuration.maxConcurrentDownloads = concurrency
            configuration.maxBytes = nil
            configuration.memoryBytes = 2 * files * bytes
            let cache = try ResourceCache(folder: folder.appendingPathComponent("buckia"), configuration: configuration)
            let downloader = ResourceDownloader(cache: cache)
            note("Buckia downloader", try await Stopwatch.time {
                let failures = await downloader.prefetch(urls.map(ResourceLocation.url))
                guard failures.isEmpty else { throw BenchFailure("Buckia failed \(failures.count) fetches: \(failures.values.first.map { "\($0)" } ?? "")") }
            })
            // Buckia again, each file renamed into place without waiting for the disk.
            var volatile = configuration
            volatile.durableWrites = false
            let volatileCache = try ResourceCache(folder: folder.appendingPathComponent("buckia-volatile"), configuration: volatile)
            let volatileDownloader = ResourceDownloader(cache: volatileCache)
            note("Buckia downloader, durableWrites off", try await Stopwatch.time {
                let failures = await volatileDownloader.prefetch(urls.map(ResourceLocation.url))
                guard failures.isEmpty else { throw BenchFailure("Buckia failed \(failures.count) fetches") }
            })
            try volatileCache.close()
            // Buckia's HTTP client alone, the same width, each body to a file: what the cache
            // adds is the difference.
            let plain = folder.appendingPathComponent("client")
            try FileManager.default.createDirectory(at: plain, withIntermediateDirectories: true)
            let client = HTTPClient()
            note("Buckia HTTPClient.download alone", try await Stopwatch.time {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    var next = 0
                    func start() {
                        guard next < urls.count else { return }
                        let (n, url) = (next, urls[next])
                        next += 1
                        group.addTask { _ = try await client.download(HTTPRequest(.get, url), to: plain.appendingPathComponent("f\(n).bin")) }
                    }
                    for _ in 0..<concurrency { start() }
                    while try await group.next() != nil { start() }
                }
            })
            // curl --parallel, the same width.
            let out = folder.appendingPathComponent("curl")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            let config = folder.appendingPathComponent("curl.config")
            try Data(urls.enumerated().map { "url = \"\($1.absoluteString)\"\noutput = \"\(out.path)/f\($0).bin\"\n" }.joined().utf8).write(to: config)
            note("curl --parallel", try await Stopwatch.time {
                let run = try ToolRun.run("/usr/bin/curl", ["-sS", "--fail", "--parallel", "--parallel-max", String(concurrency), "-K", config.path], limit: .seconds(600))
                guard run.status == 0 else { throw BenchFailure("curl failed: \(run.errors.prefix(300))") }
            })
            // URLSession with a disk URLCache.
            let session = urlSession(cache: folder.appendingPathComponent("urlcache"), concurrency: concurrency)
            note("URLSession + URLCache", try await Stopwatch.time { try await fetchAll(urls, session: session, concurrency: concurrency) })
            note("URLSession + URLCache, again (warm)", try await Stopwatch.time { try await fetchAll(urls, session: session, concurrency: concurrency) })
            session.invalidateAndCancel()

            // Hits: every entry once, from memory, from disk, through fetch, and the raw read.
            let locations = urls.map(ResourceLocation.url)
            hitSeconds["memory tier (lookup)", default: []].append(try await Stopwatch.time {
                for location in locations { guard try cache.lookup(location)?.tier == .memory else { throw BenchFailure("not a memory hit") } }
            } / Double(files))
            hitSeconds["fetch, fresh (downloader)", default: []].append(try await Stopwatch.time {
                for location in locations { guard try await downloader.fetch(location).outcome == .hit else { throw BenchFailure("not a hit") } }
            } / Double(files))
            var diskOnly = configuration
            diskOnly.memoryBytes = 0
            let disk = try ResourceCache(folder: folder.appendingPathComponent("buckia"), configuration: diskOnly)
            var paths: [URL] = []
            hitSeconds["disk tier (lookup: read, SHA-256)", default: []].append(try await Stopwatch.time {
                for location in locations {
                    guard let hit = try disk.lookup(location), hit.tier == .disk else { throw BenchFailure("not a disk hit") }
                    paths.append(hit.file)
                }
            } / Double(files))
            hitSeconds["reading the file (Data(contentsOf:))", default: []].append(try await Stopwatch.time {
                for path in paths { guard try Data(contentsOf: path).count == bytes else { throw BenchFailure("short read") } }
            } / Double(files))
        }
        func median(_ values: [Double]) -> Double { CatalogBench.median(values) }
        let megabytes = Double(files * bytes) / 1_048_576
        var lines = [
            "## Resource cache: \(files) × \(bytes / 1024) KiB from nginx \(NginxServer.version()) on 127.0.0.1, \(concurrency) at once, median of \(repeats) (release build)",
            "",
            "| cold fetch of every file | seconds | MiB/s | ÷ curl |",
            "|---|---|---|---|",
        ]
        let curl = median(results["curl --parallel"] ?? [])
        for what in ["Buckia downloader", "Buckia downloader, durableWrites off", "Buckia HTTPClient.download alone", "curl --parallel", "URLSession + URLCache", "URLSession + URLCache, again (warm)"] {
            let seconds = median(results[what] ?? [])
            lines.append(String(format: "| %@ | %.3f | %.0f | %.2f× |", what, seconds, megabytes / seconds, seconds / curl))
        }
        lines += ["", "| one hit | µs per resource |", "|---|---|"]
        for what in ["memory tier (lookup)", "fetch, fresh (downloader)", "disk tier (lookup: read, SHA-256)", "reading the file (Data(contentsOf:))"] {
            lines.append(String(format: "| %@ | %.1f |", what, median(hitSeconds[what] ?? []) * 1e6))
        }
        return lines.joined(separator: "\n")
    }

    static func urlSession(cache folder: URL, concurrency: Int) -> URLSession {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = URLCache(memoryCapacity: 0, diskCapacity: 4 << 30, diskPath: folder.path)
        configuration.requestCachePolicy = .useProtocolCachePolicy
        configuration.httpMaximumConnectionsPerHost = concurrency
        return URLSession(configuration: configuration)
    }

    /// Every URL through `session`, `concurrency` at a time.
    static func fetchAll(_ urls: [URL], session: URLSession, concurrency: Int) async throws {
        try await withThrowingTaskGroup(of: Int.self) { group in
            var next = 0
            func start() {
                guard next < urls.count else { return }
                let url = urls[next]
                next += 1
                group.addTask {
                    let (data, response) = try await session.data(from: url)
                    guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchFailure("URLSession got \(response)") }
                    return data.count
                }
            }
            for _ in 0..<concurrency { start() }
            while try await group.next() != nil { start() }
        }
    }
}
#endif
