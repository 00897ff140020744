import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

/// `buckia sync` of 500 files to S3 and back, through the fault-injecting proxy in front of
/// moto with a fifth of all requests failing. Each run of the real binary is bounded. After
/// every run, what the destination holds is checked against the source directly (moto, or the
/// local folder): a run that exits 0 left everything exact, and a run that fails names every
/// file that is not (a file it names may still have arrived: the answer to its last try can be
/// what was lost). No destination file is ever partial. Reruns converge.
@Suite("Sync under injected network faults", .serialized)
struct SyncFaultTests {
    static let fileCount = 500

    @Test("sync of 500 files at 20 % faults names every file it did not sync, and reruns converge", arguments: ["push", "pull"])
    func syncConverges(_ direction: String) async throws {
        let seed = ProcessInfo.processInfo.environment["BUCKIA_FAULT_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        let (direct, server, bucket) = try await makeS3Provider(auth: false)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sync-faults-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let source = work.appendingPathComponent("source")
        let files = try FaultInjectionTests.makeTree(at: source, seed: seed, count: Self.fileCount, smallSize: 24_000, folders: 7)
        let proxy = try FaultProxy.start(upstream: server.endpoint, rate: 0.2, seed: seed, stall: .seconds(2))
        defer { proxy.stop() }
        var environment = [
            "HOME": work.path, "PATH": "/usr/bin:/bin", "XDG_STATE_HOME": work.appendingPathComponent("xdg-state").path,
            "BUCKIA_REMOTE_FLAKY_PROVIDER": "s3", "BUCKIA_REMOTE_FLAKY_BUCKET": bucket, "BUCKIA_REMOTE_FLAKY_ENDPOINT": proxy.endpoint.absoluteString,
            "BUCKIA_REMOTE_FLAKY_CREDENTIAL_ACCESS_KEY_ID": server.accessKeyId,
            "BUCKIA_REMOTE_FLAKY_CREDENTIAL_SECRET_ACCESS_KEY": server.secretAccessKey.exposedValue,
            "BUCKIA_REMOTE_FLAKY_MULTIPART_THRESHOLD_MI_B": "5", "BUCKIA_REMOTE_FLAKY_PART_SIZE_MI_B": "5",
            "BUCKIA_REMOTE_FLAKY_STATE_DIRECTORY": work.appendingPathComponent("s3-state").path,
            "BUCKIA_REMOTE_FLAKY_STALL_TIMEOUT_SECONDS": "1", "BUCKIA_REMOTE_FLAKY_CONNECT_TIMEOUT_SECONDS": "2",
            "BUCKIA_REMOTE_FLAKY_MAX_CONCURRENT_OPERATIONS": "8", "BUCKIA_REMOTE_FLAKY_MAX_ATTEMPTS": "3",
        ]
        environment["BUCKIA_HTTP_TRANSPORT"] = ProcessInfo.processInfo.environment["BUCKIA_HTTP_TRANSPORT"]

        let report: String
        if direction == "push" {
            let runs = try await Self.converge(["sync", source.path, "flaky:tree"], environment: environment, work: work, expected: files) {
                var held: [String: Data] = [:]
                for file in try await direct.listFiles(path: "tree") {
                    held[String(file.path.rawValue.dropFirst(5))] = try await direct.readData(remotePath: file.path.rawValue)
                }
                return held
            }
            report = "push: \(runs)"
        } else {
            // The bucket gets the tree straight from moto (`clean:`), then comes down through the faults.
            var clean = environment
            for (name, value) in environment where name.hasPrefix("BUCKIA_REMOTE_FLAKY_") {
                clean["BUCKIA_REMOTE_CLEAN_" + name.dropFirst("BUCKIA_REMOTE_FLAKY_".count)] = value
            }
            clean["BUCKIA_REMOTE_CLEAN_ENDPOINT"] = server.endpoint.absoluteString
            let seeded = try FaultInjectionTests.runBounded(
                ["sync", source.path, "clean:tree"], environment: clean, log: work.appendingPathComponent("seed.log"), bound: .seconds(180))
            #expect(seeded.status == 0, "seeding the bucket failed")
            let destination = work.appendingPathComponent("pulled")
            let runs = try await Self.converge(
                ["sync", "flaky:tree", destination.path], environment: environment, work: work, expected: files
            ) {
                try Self.readTree(at: destination)
            }
            report = "pull: \(runs)"
        }
        let stats = try await proxy.stats()
        print("sync under 20 % faults (seed \(seed)), \(report); proxy: \(stats)")
        #expect(Double(stats.drawn) >= 0.2 * Double(stats.requests) / 2, "\(stats)")
        #expect(stats.totalFaults > 0 && stats.totalFaults <= stats.drawn, "\(stats)")
    }

    /// Runs the sync until it exits 0, at most four times. After each run, `held()` is what the
    /// destination holds: every file must be exact or absent, and every file not exact must be
    /// named by the run as failed (a run that exits 0 names none).
    static func converge(
        _ arguments: [String], environment: [String: String], work: URL, expected files: [String: Data], held: () async throws -> [String: Data]
    ) async throws -> String {
        var statuses: [Int32] = []
        var named: [Int] = []
        for run in 1...4 {
            let log = work.appendingPathComponent("run-\(run)-\(UUID().uuidString).log")
            let (status, signalled, hung) = try FaultInjectionTests.runBounded(arguments, environment: environment, log: log, bound: .seconds(240))
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if hung || signalled {
                Issue.record("run \(run) of \(arguments) \(hung ? "hung" : "ended by signal \(status)")\n\(text.suffix(2000))")
                throw BuckiaError(.io, "buckia hung or trapped")
            }
            statuses.append(status)
            let failed = Set(text.split(separator: "\n").filter { $0.hasPrefix("buckia: failed: ") }.compactMap { line -> String? in
                let rest = line.dropFirst(16)
                return rest.firstIndex(of: ":").map { String(rest[..<$0]) }
            })
            named.append(failed.count)
            let now = try await held()
            for (path, data) in now where Temporaries.isTemporaryName(Array(path.split(separator: "/").last.map(String.init)?.utf8 ?? "".utf8)) || files[path] != data {
                Issue.record("run \(run): \(path) at the destination is \(files[path] == nil ? "not a source file" : "partial or wrong") (\(data.count) bytes)")
            }
            let missing = Set(files.keys).subtracting(now.keys)
            // A run that failed as a whole (its listing ran out of retries, say) names no
            // file: it printed one error and no summary, claiming nothing done.
            let lines = text.split(separator: "\n")
            let wholeRunFailed = status != 0 && failed.isEmpty && !text.contains("Synced:")
                && lines.contains { $0.hasPrefix("buckia: ") && !$0.hasPrefix("buckia: failed: ") }
            if wholeRunFailed {
                print("run \(run) of \(arguments) failed as a whole: \(lines.filter { $0.hasPrefix("buckia: ") }.suffix(2).joined(separator: " / "))")
            }
            let unnamed = wholeRunFailed ? [] : missing.subtracting(failed)
            #expect(unnamed.isEmpty, "run \(run) exited \(status) without naming \(unnamed.sorted().prefix(10))\n\(text.suffix(1500))")
            if status == 0 {
                #expect(missing.isEmpty, "run \(run) exited 0 with \(missing.count) files missing")
                return "\(run) run\(run == 1 ? "" : "s") (exit \(statuses.map(String.init).joined(separator: ", ")); files named as failed per run: \(named.map(String.init).joined(separator: ", ")))"
            }
            #expect([1, 7].contains(status), "a failed run exits 1 or 7, not \(status)\n\(text.suffix(1500))")
        }
        Issue.record("\(arguments) did not converge in 4 runs (exit \(statuses))")
        throw BuckiaError(.io, "no convergence")
    }

    /// Every regular file under `root` except Buckia's own folder, by relative path
    /// (temporaries included, so a leftover one is caught).
    static func readTree(at root: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let prefix = root.standardizedFileURL.path + "/"
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else { return files }
        for case let url as URL in walker {
            let path = url.standardizedFileURL.path
            let relative = path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
            if relative == ".buckia" {
                walker.skipDescendants()
                continue
            }
            guard (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else { continue }
            files[relative] = try Data(contentsOf: url)
        }
        return files
    }
}
