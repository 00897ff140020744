import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `buckia cp -r` of 200 files up to S3 and back down, through the fault-injecting proxy in
/// front of moto, with a tenth and then a quarter of all requests failing in every way the
/// proxy knows. Each run of the real binary is bounded; the copy must converge on the first
/// run or on reruns that redo only what failed, and every byte is then checked against moto
/// directly (not through the proxy).
@Suite("S3 under injected network faults", .serialized)
struct FaultInjectionTests {
    /// 198 small files and two multipart ones (three parts each), in nested folders.
    static let fileCount = 200

    @Test("cp -r of 200 files up and down converges under mixed faults", arguments: [0.10, 0.25])
    func copyConverges(rate: Double) async throws {
        let seed = ProcessInfo.processInfo.environment["BUCKIA_FAULT_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        let (direct, server, bucket) = try await makeS3Provider(auth: false)
        let proxy = try FaultProxy.start(upstream: server.endpoint, rate: rate, seed: seed, stall: .seconds(2))
        defer { proxy.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-faults-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let source = work.appendingPathComponent("source")
        let files = try Self.makeTree(at: source, seed: seed)
        var environment = [
            "HOME": work.path, "PATH": "/usr/bin:/bin", "BUCKIA_REMOTE_FLAKY_PROVIDER": "s3", "BUCKIA_REMOTE_FLAKY_BUCKET": bucket,
            "BUCKIA_REMOTE_FLAKY_ENDPOINT": proxy.endpoint.absoluteString, "BUCKIA_REMOTE_FLAKY_CREDENTIAL_ACCESS_KEY_ID": server.accessKeyId,
            "BUCKIA_REMOTE_FLAKY_CREDENTIAL_SECRET_ACCESS_KEY": server.secretAccessKey.exposedValue,
            "BUCKIA_REMOTE_FLAKY_MULTIPART_THRESHOLD_MI_B": "5", "BUCKIA_REMOTE_FLAKY_PART_SIZE_MI_B": "5",
            "BUCKIA_REMOTE_FLAKY_STATE_DIRECTORY": work.appendingPathComponent("state").path,
            // A stall is abandoned after one second; the proxy's last two.
            "BUCKIA_REMOTE_FLAKY_STALL_TIMEOUT_SECONDS": "1", "BUCKIA_REMOTE_FLAKY_CONNECT_TIMEOUT_SECONDS": "2",
            "BUCKIA_REMOTE_FLAKY_MAX_CONCURRENT_OPERATIONS": "8",
            // Four attempts (the default) fail together for one request in 10,000 at 10 %, but
            // for one in 256 at 25 %: a link that bad is what `maxAttempts` is for.
            "BUCKIA_REMOTE_FLAKY_MAX_ATTEMPTS": rate > 0.2 ? "8" : "4",
        ]
        // CI runs the S3 tests a second time over URLSession; the copies follow.
        environment["BUCKIA_HTTP_TRANSPORT"] = ProcessInfo.processInfo.environment["BUCKIA_HTTP_TRANSPORT"]

        let up = try Self.converge(["cp", "-r", "--verbose", source.path, "flaky:tree"], environment: environment, work: work)
        // Every object, read from moto directly, is the file it came from; nothing else is there.
        let listed = try await direct.listFiles(path: "tree")
        #expect(Set(listed.map(\.path.description)) == Set(files.keys.map { "tree/\($0)" }), "seed \(seed)")
        for (path, data) in files {
            #expect(try await direct.readData(remotePath: "tree/\(path)") == data, "tree/\(path), seed \(seed)")
        }

        let destination = work.appendingPathComponent("copy")
        let down = try Self.converge(["cp", "-r", "--verbose", "flaky:tree", destination.path], environment: environment, work: work)
        let copied = try Self.readTree(at: destination)
        #expect(Set(copied.keys) == Set(files.keys), "seed \(seed): no file missing, no temporary left")
        for (path, data) in files {
            #expect(copied[path] == data, "\(path), seed \(seed)")
        }

        let stats = try await proxy.stats()
        print("\(Int(rate * 100)) % faults (seed \(seed)): up in \(up), down in \(down); proxy: \(stats)")
        // The faults were really there: drawn for about `rate` of the requests, and most
        // kinds of them applied. (Those that applied depend on the mix of requests: a PUT has
        // no response body to cut or corrupt. Checked against `rate`, their count fell below
        // half of it in 1 run of about 15: 31 of 641 at 10 %.)
        #expect(Double(stats.drawn) >= rate * Double(stats.requests) / 2, "\(stats)")
        #expect(stats.totalFaults > 0 && stats.totalFaults <= stats.drawn, "\(stats)")
        // (Corruptions apply only to object bodies, so at 10 % a kind or two may not come up.)
        #expect(stats.faults.count >= (rate > 0.2 ? 8 : 5), "\(stats)")
    }

    /// FoundationNetworking was reported to trap (`try!` in EasyHandle) on replies that are not
    /// HTTP, in 2 of 30 single-file uploads and 9 of 15 tree uploads. Both shapes (12 and 3
    /// runs), each run of the real binary bounded, over each transport: a clean failure, never
    /// a signal. (This toolchain's URLSession did not trap in 45 such runs; the test stays to
    /// catch it.)
    @Test("An endpoint that answers garbage fails every copy cleanly, never by a trap", arguments: ["libcurl", "urlsession"])
    func garbageNeverTraps(_ transport: String) async throws {
        let (_, server, bucket) = try await makeS3Provider(auth: false)
        let proxy = try FaultProxy.start(upstream: server.endpoint, rate: 1, seed: 1, kinds: ["garbage"])
        defer { proxy.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-garbage-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let files = try Self.makeTree(at: work.appendingPathComponent("tree"), seed: 3).keys.sorted().prefix(12)
        let environment = [
            "HOME": work.path, "PATH": "/usr/bin:/bin", "BUCKIA_REMOTE_G_PROVIDER": "s3", "BUCKIA_REMOTE_G_BUCKET": bucket,
            "BUCKIA_REMOTE_G_ENDPOINT": proxy.endpoint.absoluteString, "BUCKIA_REMOTE_G_CREDENTIAL_ACCESS_KEY_ID": server.accessKeyId,
            "BUCKIA_REMOTE_G_CREDENTIAL_SECRET_ACCESS_KEY": server.secretAccessKey.exposedValue, "BUCKIA_REMOTE_G_MAX_ATTEMPTS": "2",
            "BUCKIA_HTTP_TRANSPORT": transport,
        ]
        var runs: [[String]] = files.map { ["cp", work.appendingPathComponent("tree/\($0)").path, "g:one/\($0)"] }
        runs += Array(repeating: ["cp", "-r", work.appendingPathComponent("tree").path, "g:tree"], count: 3)
        for (index, arguments) in runs.enumerated() {
            let run = try Self.runBounded(arguments, environment: environment, log: work.appendingPathComponent("run-\(index).log"), bound: .seconds(120))
            #expect(!run.signalled && !run.hung, "\(arguments): signal \(run.status)")
            #expect([1, 7].contains(run.status), "\(arguments): exit \(run.status)")
        }
        #expect(try await proxy.stats().faults["garbage"] ?? 0 >= runs.count)
    }

    /// As curl: `http_proxy` is honoured for http URLs, upper-case `HTTP_PROXY` is not (CGI
    /// servers set it from a request header — "httpoxy"), `https_proxy` / `HTTPS_PROXY` serve
    /// https URLs, and `NO_PROXY` names hosts that bypass the proxy.
    @Test("Proxy variables are honoured as curl honours them, and NO_PROXY bypasses them (libcurl)", arguments: [
        (["http_proxy"], true), (["HTTP_PROXY"], false), (["http_proxy", "NO_PROXY"], false), (["http_proxy", "no_proxy"], false),
    ])
    func proxyEnvironment(_ variables: [String], _ proxied: Bool) async throws {
        let (_, server, bucket) = try await makeS3Provider(auth: false)
        let proxy = try FaultProxy.start(upstream: server.endpoint, rate: 0, seed: 1)
        defer { proxy.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-proxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("hello.txt")
        try Data("through the proxy\n".utf8).write(to: file)
        // The endpoint is a port nothing listens on: only a proxy can carry the request.
        var environment = [
            "HOME": work.path, "PATH": "/usr/bin:/bin", "BUCKIA_REMOTE_P_PROVIDER": "s3", "BUCKIA_REMOTE_P_BUCKET": bucket,
            "BUCKIA_REMOTE_P_ENDPOINT": "http://127.0.0.1:9", "BUCKIA_REMOTE_P_CREDENTIAL_ACCESS_KEY_ID": server.accessKeyId,
            "BUCKIA_REMOTE_P_CREDENTIAL_SECRET_ACCESS_KEY": server.secretAccessKey.exposedValue, "BUCKIA_REMOTE_P_MAX_ATTEMPTS": "1",
            "BUCKIA_HTTP_TRANSPORT": "libcurl",
        ]
        for variable in variables {
            environment[variable] = variable.lowercased() == "no_proxy" ? "127.0.0.1" : proxy.endpoint.absoluteString
        }
        let run = try Self.runBounded(["cp", file.path, "p:hello.txt"], environment: environment, log: work.appendingPathComponent("run.log"), bound: .seconds(60))
        #expect(!run.signalled)
        #expect((run.status == 0) == proxied, "\(variables): exit \(run.status)")
        #expect((try await proxy.stats().requests > 0) == proxied, "\(variables)")
    }

    /// How a copy got to exit 0: the runs it took, the exit status of each, and the retries
    /// its HTTP log reported.
    struct Convergence: CustomStringConvertible {
        var statuses: [Int32] = []
        var retries = 0
        /// What the runs that failed reported, one line per file.
        var failures: [String] = []
        var description: String {
            let runs = "\(statuses.count) run\(statuses.count == 1 ? "" : "s") (exit \(statuses.map(String.init).joined(separator: ", ")))"
            let why = failures.isEmpty ? "" : " [\(failures.joined(separator: " | "))]"
            return "\(runs), \(retries) retries\(why)"
        }
    }

    /// Runs the command until it exits 0, at most three times, each run bounded to three
    /// minutes. A run that is killed for taking longer (a hang) or that ends by a signal (a
    /// trap) fails the test at once.
    static func converge(_ arguments: [String], environment: [String: String], work: URL) throws -> Convergence {
        var result = Convergence()
        for run in 1...3 {
            let log = work.appendingPathComponent("run-\(UUID().uuidString).log")
            let (status, signalled, hung) = try runBounded(arguments, environment: environment, log: log, bound: .seconds(180))
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            result.retries += text.components(separatedBy: "; retrying in").count - 1
            let tail = text.split(separator: "\n").filter { !$0.contains(" attempt ") }.suffix(15).joined(separator: "\n")
            if hung { Issue.record("run \(run) of \(arguments) did not end within 3 minutes: a hang\n\(tail)") }
            if signalled { Issue.record("run \(run) of \(arguments) ended by signal \(status): a trap\n\(tail)") }
            if hung || signalled { throw BuckiaError(.io, "buckia hung or trapped") }
            result.statuses.append(status)
            if status == 0 { return result }
            result.failures += text.split(separator: "\n").filter { $0.hasPrefix("buckia: failed: ") }.map { String($0.dropFirst(16)) }
            #expect([1, 7].contains(status), "a failed run exits 1 or 7 (partial), not \(status)\n\(tail)")
        }
        Issue.record("\(arguments) did not converge in 3 runs: \(result)")
        throw BuckiaError(.io, "no convergence")
    }

    /// Runs the built `buckia` with standard error to `log`, killing it after `bound`.
    static func runBounded(
        _ arguments: [String], environment: [String: String], log: URL, bound: Duration
    ) throws -> (status: Int32, signalled: Bool, hung: Bool) {
        let process = try Spawned(
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia"), arguments,
            environment: environment, errors: .file(log))
        let hung = !process.wait(bound)
        process.stop()
        var signalled = false
        if case .signalled = process.termination { signalled = true }
        return (process.status, signalled, hung)
    }

    /// Writes the tree (`count` files: two multipart ones of three parts, the rest up to
    /// `smallSize` bytes, in nested folders) and returns each file's relative path and bytes.
    static func makeTree(at root: URL, seed: UInt64, count: Int = fileCount, smallSize: UInt64 = 48_000, folders: Int = 5) throws -> [String: Data] {
        var generator = SplitMix64(seed: seed)
        var files: [String: Data] = [:]
        for index in 0..<count {
            let path: String
            let size: Int
            if index < 2 {
                path = "big/part-\(index).bin"
                size = 11 * 1_048_576 + index * 4099
            } else {
                path = "d\(index % folders)/e\(index % 3)/file-\(index).bin"
                size = Int(generator.next() % smallSize) + 1
            }
            var bytes = [UInt8](repeating: 0, count: size)
            var word = generator.next()
            for offset in bytes.indices {
                if offset % 8 == 0 { word = generator.next() }
                bytes[offset] = UInt8(truncatingIfNeeded: word >> ((offset % 8) * 8))
            }
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let data = Data(bytes)
            try data.write(to: url)
            files[path] = data
        }
        return files
    }

    /// Every regular file under `root` (temporaries included), by relative path.
    static func readTree(at root: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let prefix = root.standardizedFileURL.path + "/"
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else { return files }
        for case let url as URL in walker where (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true {
            let path = url.standardizedFileURL.path
            files[path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path] = try Data(contentsOf: url)
        }
        return files
    }
}
