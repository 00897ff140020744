#if os(macOS) || os(Linux)
import Buckia
import BuckiaHTTP
import BuckiaTestSupport
import Foundation

/// `buckia-bench bunny-list`: a recursive listing of many objects in many folders through the
/// Bunny provider against the Bunny emulator, beside the limit — the same folder listings fetched
/// raw with the HTTP client, one at a time and `width` at a time — and the requests a no-op
/// sync resync makes.
enum BunnyListBench {
    static func run(_ arguments: [String]) async -> Int32 {
        var folders = 100, perFolder = 100, repeats = 3, latency = 0
        var index = 0
        while index + 1 < arguments.count {
            switch arguments[index] {
            case "--folders": folders = max(1, Int(arguments[index + 1]) ?? folders)
            case "--per-folder": perFolder = max(1, Int(arguments[index + 1]) ?? perFolder)
            case "--repeat": repeats = max(1, Int(arguments[index + 1]) ?? repeats)
            case "--latency-ms": latency = max(0, Int(arguments[index + 1]) ?? 0)
            default:
                FileHandle.standardError.write(Data("buckia-bench: unknown option \(arguments[index])\n".utf8))
                return 2
            }
            index += 2
        }
        do {
            print(try await measure(folders: folders, perFolder: perFolder, repeats: repeats, latency: latency))
            return 0
        } catch {
            FileHandle.standardError.write(Data("buckia-bench: \(error)\n".utf8))
            return 1
        }
    }

    static func provider(_ emulator: BunnyEmulator, concurrency: Int) throws -> BunnyProvider {
        var configuration = emulator.configuration()
        configuration.maxConcurrentOperations = concurrency
        return BunnyProvider(settings: try BunnySettings.resolve(configuration, environment: [:]))
    }

    static func measure(folders: Int, perFolder: Int, repeats: Int, latency: Int) async throws -> String {
        let emulator = try await BunnyEmulator.start(latencyMilliseconds: latency)
        defer { emulator.stop() }
        let total = folders * perFolder
        let loader = try provider(emulator, concurrency: 16)
        let names = (0..<folders).flatMap { folder in (0..<perFolder).map { "tree/folder-\(String(format: "%03d", folder))/file-\(String(format: "%04d", $0)).txt" } }
        let loading = try await Stopwatch.time {
            try await forEachConcurrently(names, width: 16) { name in
                try await loader.uploadData(Data(name.utf8), remotePath: name)
            }
        }
        var lines = [
            "| \(total) objects in \(folders) folders, Bunny emulator, \(latency) ms a request | median of \(repeats) | folder reads | vs raw at the same width |",
            "|---|---|---|---|",
        ]
        // The limit: every folder listing fetched and decoded, no walk, no sorting.
        let client = HTTPClient(configuration: .init(maximumConnectionsPerHost: 16))
        func raw(width: Int) async throws {
            let prefixes = ["tree/"] + (0..<folders).map { "tree/folder-\(String(format: "%03d", $0))/" }
            try await forEachConcurrently(prefixes, width: width) { prefix in
                guard let url = URL(string: emulator.endpoint.absoluteString + "/" + emulator.zone + "/" + prefix) else { throw BuckiaError(.invalidPath, prefix) }
                var request = HTTPRequest(.get, url)
                request.headers.set("AccessKey", secret: Secret(emulator.password))
                let data = try await client.send(request).data
                guard let array = try JSONSerialization.jsonObject(with: data) as? [Any], !array.isEmpty else {
                    throw BuckiaError(.corrupt, "An empty or unreadable listing of \(prefix).")
                }
            }
        }
        var rawTimes: [Int: Double] = [:]
        for width in [1, 4, 8] {
            var times: [Double] = []
            for _ in 0..<repeats { times.append(try await Stopwatch.time { try await raw(width: width) }) }
            let median = Stopwatch.median(times)
            rawTimes[width] = median
            lines.append("| raw folder GETs, \(width) at a time | \(String(format: "%.0f ms", median * 1000)) | \(folders + 1) | 1.00× |")
        }
        for width in [1, 4, 8] {
            let provider = try provider(emulator, concurrency: width)
            var times: [Double] = []
            var reads = 0
            for _ in 0..<repeats {
                try await emulator.resetStats()
                var count = 0
                times.append(try await Stopwatch.time {
                    for try await entry in provider.list(ListOptions(prefix: "tree/", recursive: true)) where entry.file != nil { count += 1 }
                })
                guard count == total else { throw BuckiaError(.corrupt, "The listing found \(count) of \(total) objects.") }
                reads = try await emulator.stats().count("list")
            }
            let time = Stopwatch.median(times)
            lines.append(
                "| `list` recursive, read-ahead \(width) | \(String(format: "%.0f ms", time * 1000)) | \(reads) | \(String(format: "%.2f×", time / (rawTimes[width] ?? time))) |")
        }
        // A no-op resync: listings only.
        let local = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-bench-bunny-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: local) }
        let state = local.appendingPathExtension("state")
        defer { try? FileManager.default.removeItem(at: state) }
        let pulled = try LocalProvider(root: local, durable: false)
        let remote = try provider(emulator, concurrency: 8)
        func pull() async throws -> SyncResult {
            let store = try SyncStateStore(url: state)
            defer { store.close() }
            return try await SyncEngine(
                local: try SyncEndpoint(provider: pulled, path: "tree/", backend: "local"), remote: try SyncEndpoint(provider: remote, path: "tree/", backend: "bunny"),
                options: SyncOptions(mode: .pull), stateStore: store).run()
        }
        let first = try await pull()
        try await emulator.resetStats()
        let resync = try await Stopwatch.time { _ = try await pull() }
        let stats = try await emulator.stats()
        let perFile = stats.total - stats.count("list")
        lines += [
            "", "Loading them took \(String(format: "%.1f s", loading)) (16 uploads at a time). A pull of the tree downloaded \(first.downloaded) files;",
            "the no-op resync took \(String(format: "%.0f ms", resync * 1000)) and made \(stats.count("list")) folder listings and \(perFile) other requests.",
        ]
        return lines.joined(separator: "\n")
    }
}
#endif
