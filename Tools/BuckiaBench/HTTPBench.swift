#if os(macOS) || os(Linux)
import Buckia
import BuckiaHTTP
import BuckiaTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `buckia-bench http`: Buckia's HTTP client over each transport beside the `curl` command-line
/// tool, against Debian's nginx with WebDAV PUT started on 127.0.0.1 for the run — a server
/// fast enough that the client is what is measured. The data lives in /dev/shm where it can,
/// so the disk is not measured either.
///
/// Workloads: one big PUT and GET (1 GiB by default), and many 10 KiB PUTs and GETs with 16 in
/// flight. Each row reports the median of R runs: wall time, throughput, and CPU seconds (of
/// this process for Buckia, of the child for curl; nginx's are not counted).
struct HTTPBench {
    var bigMiB = 1024
    var smallCount = 2000
    var smallBytes = 10 * 1024
    var concurrency = 16
    var repeats = 5
    /// Which workloads run: `big`, `small` or both.
    var workloads: Set<String> = ["big", "small"]
    /// Which clients run: `curl`, `libcurl`, `urlsession`.
    var clients: Set<String> = ["curl", "libcurl", "urlsession"]

    struct Row {
        var workload: String
        var tool: String
        var seconds: Double
        var cpu: Double
        var bytes: Int64
        var requests: Int
    }

    func run() async throws -> String {
        let work = try makeWorkFolder()
        defer { try? FileManager.default.removeItem(at: work) }
        let server = try NginxServer.start(in: work, tuned: true)
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"

        let big = work.appendingPathComponent("big.bin")
        if workloads.contains("big") { try writePattern(to: big, bytes: Int64(bigMiB) * 1_048_576) }
        let small = work.appendingPathComponent("small.bin")
        try Data((0..<smallBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: small)
        let bigBytes = Int64(bigMiB) * 1_048_576
        let smallData = try Data(contentsOf: small)


        let kinds: [(name: String, kind: HTTPClient.TransportKind)] = [("Buckia libcurl", .libcurl), ("Buckia URLSession", .urlSession)]
            .filter { clients.contains($0.kind == .libcurl ? "libcurl" : "urlsession") }
        var workloadList: [Workload] = []
        let downloaded = work.appendingPathComponent("download.bin")

        if workloads.contains("big") {
            var put = Workload(name: "PUT \(bigMiB) MiB", bytes: bigBytes, requests: 1)
            var get = Workload(name: "GET \(bigMiB) MiB", bytes: bigBytes, requests: 1)
            // Each download starts with no file at its destination (tmpfs frees pages lazily).
            get.after = { try? FileManager.default.removeItem(at: downloaded) }
            if clients.contains("curl") {
                put.clients.append(.process("curl") { _ in try runCurl(["-sS", "--fail", "-o", "/dev/null", "-T", big.path, "\(base)/big-curl.bin"]) })
                get.clients.append(.process("curl") { _ in try runCurl(["-sS", "--fail", "-o", downloaded.path, "\(base)/big-curl.bin"]) })
            }
            for (name, kind) in kinds {
                let client = makeClient(kind)
                let target = try url("\(base)/big-\(kind.rawValue).bin")
                put.clients.append(.inProcess(name) { _ in _ = try await client.send(HTTPRequest(.put, target, body: .file(big))) })
                get.clients.append(.inProcess(name) { _ in _ = try await client.download(HTTPRequest(.get, target), to: downloaded) })
            }
            workloadList += [put, get]
        }

        if workloads.contains("small") {
            let label = "\(smallCount) × \(smallBytes / 1024) KiB"
            let smallTotal = Int64(smallCount * smallBytes)
            var put = Workload(name: "PUT \(label)", bytes: smallTotal, requests: smallCount)
            var get = Workload(name: "GET \(label)", bytes: smallTotal, requests: smallCount)
            let parallel = ["-sS", "--no-progress-meter", "--fail", "--parallel", "--parallel-max", "\(concurrency)", "-K"]
            if clients.contains("curl") {
                put.clients.append(.process("curl --parallel") { run in
                    let config = work.appendingPathComponent("put-\(run).curl")
                    let lines = (0..<smallCount).map { "upload-file = \"\(small.path)\"\nurl = \"\(base)/s/curl-\(run)-\($0)\"\noutput = \"/dev/null\"" }
                    try Data(lines.joined(separator: "\n").utf8).write(to: config)
                    try runCurl(parallel + [config.path])
                })
                get.clients.append(.process("curl --parallel") { run in
                    let config = work.appendingPathComponent("get-\(run).curl")
                    let lines = (0..<smallCount).map { "url = \"\(base)/s/seed-\($0)\"\noutput = \"/dev/null\"" }
                    try Data(lines.joined(separator: "\n").utf8).write(to: config)
                    try runCurl(parallel + [config.path])
                })
            }
            for (name, kind) in kinds {
                let client = makeClient(kind)
                put.clients.append(.inProcess(name) { run in
                    try await forEachConcurrently(smallCount) { index in
                        _ = try await client.send(HTTPRequest(.put, try url("\(base)/s/\(kind.rawValue)-\(run)-\(index)"), body: .data(smallData)))
                    }
                })
                get.clients.append(.inProcess(name) { _ in
                    try await forEachConcurrently(smallCount) { index in
                        let response = try await client.send(HTTPRequest(.get, try url("\(base)/s/seed-\(index)")))
                        guard response.data.count == smallBytes else {
                            throw BuckiaError(.corrupt, "GET returned \(response.data.count) bytes, not \(smallBytes).")
                        }
                    }
                })
            }
            // The objects every GET reads, written once before any timing.
            let seeder = makeClient(.libcurl)
            try await forEachConcurrently(smallCount) { index in
                _ = try await seeder.send(HTTPRequest(.put, try url("\(base)/s/seed-\(index)"), body: .data(smallData)))
            }
            workloadList += [put, get]
        }

        var rows: [Row] = []
        for workload in workloadList {
            rows += try await measure(workload)
        }
        try? FileManager.default.removeItem(at: big)
        return table(rows)
    }

    /// One workload and the clients that take turns at it.
    struct Workload {
        enum Client {
            /// A child process (curl): its CPU is the children's.
            case process(String, (Int) throws -> Void)
            /// Buckia in this process: its CPU is this process's.
            case inProcess(String, (Int) async throws -> Void)

            var name: String {
                switch self {
                case .process(let name, _), .inProcess(let name, _): name
                }
            }
        }

        var name: String
        var bytes: Int64
        var requests: Int
        var clients: [Client] = []
        /// Runs after each timed run, untimed.
        var after: () -> Void = {}
    }

    // MARK: Measuring

    private func makeClient(_ kind: HTTPClient.TransportKind) -> HTTPClient {
        HTTPClient(configuration: .init(maximumConnectionsPerHost: concurrency, retryPolicy: .none, transport: kind))
    }

    private func url(_ text: String) throws -> URL {
        guard let url = URL(string: text) else { throw BuckiaError(.invalidPath, "Not a URL: \(text)") }
        return url
    }

    /// Runs every client `repeats` times, the clients taking turns in each round so that all of
    /// them meet the same state of the machine, and keeps each one's median time and CPU.
    private func measure(_ workload: Workload) async throws -> [Row] {
        var times = Array(repeating: [Double](), count: workload.clients.count)
        var cpus = Array(repeating: [Double](), count: workload.clients.count)
        for run in 0..<repeats {
            for (index, client) in workload.clients.enumerated() {
                switch client {
                case .process(_, let body):
                    let before = CPU.children()
                    times[index].append(try Stopwatch.seconds { try body(run) })
                    cpus[index].append(CPU.children() - before)
                case .inProcess(_, let body):
                    let before = CPU.process()
                    times[index].append(try await Stopwatch.time { try await body(run) })
                    cpus[index].append(CPU.process() - before)
                }
                workload.after()
            }
        }
        return workload.clients.indices.map { index in
            Row(
                workload: workload.name, tool: workload.clients[index].name, seconds: Stopwatch.median(times[index]),
                cpu: Stopwatch.median(cpus[index]), bytes: workload.bytes, requests: workload.requests)
        }
    }

    /// Runs `count` jobs with at most `concurrency` at once.
    private func forEachConcurrently(_ count: Int, _ job: @escaping @Sendable (Int) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            while next < min(concurrency, count) {
                let index = next
                group.addTask { try await job(index) }
                next += 1
            }
            while try await group.next() != nil {
                if next < count {
                    let index = next
                    group.addTask { try await job(index) }
                    next += 1
                }
            }
        }
    }

    private func runCurl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BuckiaError(.io, "curl \(arguments.prefix(6).joined(separator: " ")) … exited \(process.terminationStatus).")
        }
    }

    private func table(_ rows: [Row]) -> String {
        var lines = [
            "buckia-bench http — nginx \(NginxServer.version()) WebDAV on 127.0.0.1, \(ProcessInfo.processInfo.activeProcessorCount) cores, median of \(repeats) runs, \(concurrency) in flight for small requests",
            "",
            "| workload | client | time | throughput | vs curl | CPU s | CPU s/GiB |",
            "|---|---|---|---|---|---|---|",
        ]
        var reference: [String: Double] = [:]
        for row in rows where row.tool.hasPrefix("curl") { reference[row.workload] = row.seconds }
        for row in rows {
            let gib = Double(row.bytes) / 1_073_741_824
            let throughput = row.requests > 1
                ? String(format: "%.0f req/s", Double(row.requests) / row.seconds)
                : String(format: "%.0f MiB/s", Double(row.bytes) / 1_048_576 / row.seconds)
            let ratio = reference[row.workload].map { String(format: "%.2f×", $0 / row.seconds) } ?? "—"
            lines.append(
                "| \(row.workload) | \(row.tool) | \(Stopwatch.format(row.seconds)) | \(throughput) | \(ratio) | \(String(format: "%.2f", row.cpu)) | \(String(format: "%.2f", row.cpu / gib)) |")
        }
        lines.append("")
        lines.append("vs curl: curl's time ÷ this client's (above 1 is faster than curl). CPU: user + system seconds of the client only.")
        return lines.joined(separator: "\n")
    }

    // MARK: Files

    private func makeWorkFolder() throws -> URL {
        let shm = URL(fileURLWithPath: "/dev/shm", isDirectory: true)
        let parent = FileManager.default.isWritableFile(atPath: shm.path) ? shm : FileManager.default.temporaryDirectory
        let folder = parent.appendingPathComponent("buckia-bench-http-\(UUID().uuidString)")
        for name in ["data/s", "tmp", "conf"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        return folder
    }

    /// Writes `bytes` of a fixed pseudo-random pattern in 1 MiB blocks.
    private func writePattern(to url: URL, bytes: Int64) throws {
        var generator = SystemRandomNumberGenerator()
        let block = Data((0..<1_048_576).map { _ in UInt8.random(in: 0...255, using: &generator) })
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var written: Int64 = 0
        while written < bytes {
            try handle.write(contentsOf: block.prefix(Int(min(Int64(block.count), bytes - written))))
            written += Int64(block.count)
        }
    }
}

/// CPU seconds (user + system) from getrusage.
enum CPU {
    static func process() -> Double { seconds(RUSAGE_SELF.rawValue) }
    static func children() -> Double { seconds(RUSAGE_CHILDREN.rawValue) }

    private static func seconds(_ who: __rusage_who_t) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }
}
#endif
