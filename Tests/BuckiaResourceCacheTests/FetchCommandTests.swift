import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// `buckia fetch` and `buckia cache`, run as processes against the scripted origin.
@Suite("buckia fetch and buckia cache")
struct FetchCommandTests {
    struct Run: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs the built `buckia` (beside the test bundle) with a private home, off the
    /// cooperative pool; at most 120 s.
    static func buckia(_ arguments: [String], home: URL, extra: [String: String] = [:]) async throws -> Run {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia")
        let environment = Self.environment(home: home).merging(extra) { $1 }
        return try await offPool {
            let result = try ToolRun.run(path: executable, arguments, exactEnvironment: environment, limit: .seconds(120))
            return Run(status: result.status, stdout: result.output, stderr: result.errors)
        }
    }

    /// A private home for a `buckia` run: its caches, configuration and temporaries there.
    static func environment(home: URL) -> [String: String] {
        ["HOME": home.path, "XDG_CACHE_HOME": home.appendingPathComponent("cache").path, "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
            "TMPDIR": NSTemporaryDirectory(), "PATH": "/usr/bin:/bin"]
    }

    static func home() throws -> URL {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-fetch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        return home
    }

    static func remove(_ folder: URL) {
        do {
            try FileManager.default.removeItem(at: folder)
        } catch {
            Issue.record("\(folder.path) was left behind: \(error)")
        }
    }

    @Test("20 buckia fetch processes of one URL into one cache folder cause one download; the others find it cached", .timeLimit(.minutes(15)))
    func twentyProcesses() async throws {
        let origin = try Origin()
        let home = try Self.home()
        defer { Self.remove(home) }
        try await origin.set("shared", ["cache_control": "max-age=600", "delay": 0.5, "size": 100_000])
        let url = try origin.url("shared").absoluteString
        let cache = home.appendingPathComponent("shared-cache").path
        let runs = try await withThrowingTaskGroup(of: Run.self) { group in
            for _ in 0..<20 { group.addTask { try await Self.buckia(["fetch", url, "--cache", cache, "--json"], home: home) } }
            var runs: [Run] = []
            for try await run in group { runs.append(run) }
            return runs
        }
        var outcomes: [String: Int] = [:]
        var paths = Set<String>()
        for run in runs {
            #expect(run.status == 0, "\(run.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            outcomes[object["outcome"] as? String ?? "?", default: 0] += 1
            paths.insert(object["path"] as? String ?? "")
            #expect(object["bytes"] as? Int == 100_000)
        }
        #expect(try await origin.counts("shared").full == 1, "the processes downloaded it more than once")
        #expect(outcomes == ["downloaded": 1, "hit": 19])
        #expect(paths.count == 1)
    }

    @Test("fetch prints the outcome and the cached file; cache stats, trim and clear report what they did")
    func fetchAndCache() async throws {
        let origin = try Origin()
        let home = try Self.home()
        defer { Self.remove(home) }
        try await origin.set("a", ["cache_control": "max-age=600", "size": 300])
        try await origin.set("n", ["cache_control": "no-store"])
        let url = try origin.url("a").absoluteString
        let first = try await Self.buckia(["fetch", url], home: home)
        #expect(first.status == 0 && first.stdout.hasPrefix("downloaded  "), "\(first)")
        let path = String(first.stdout.dropFirst("downloaded  ".count).dropLast())
        #expect(path.hasPrefix(home.appendingPathComponent("cache/buckia/resources").path))
        #expect((try Data(contentsOf: URL(fileURLWithPath: path))).count == 300)
        #expect(try await Self.buckia(["fetch", url], home: home).stdout == "hit  \(path)\n")
        let uncached = try await Self.buckia(["fetch", origin.url("n").absoluteString], home: home)
        #expect(uncached.status == 0 && uncached.stdout == "downloaded  (not cached: the response said no-store)\n", "\(uncached)")
        let stats = try await Self.buckia(["cache", "stats", "--json"], home: home)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
        #expect(object["entries"] as? Int == 1 && object["bytes"] as? Int == 300, "\(stats)")
        #expect(try await Self.buckia(["cache", "trim"], home: home).stdout == "Evicted 0 entries (0 bytes).\n")
        #expect(try await Self.buckia(["cache", "clear"], home: home).stdout == "Removed 1 entry.\n")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try await Self.buckia(["cache", "stats"], home: home).stdout.hasPrefix("0 entries, 0 bytes, 0 pinned"))
    }

    @Test("fetch of REMOTE:PATH reads through the remote's provider and caches it")
    func fetchRemote() async throws {
        let home = try Self.home()
        defer { Self.remove(home) }
        let root = home.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("docs"), withIntermediateDirectories: true)
        try Data("remote bytes".utf8).write(to: root.appendingPathComponent("docs/a.txt"))
        let remote = ["BUCKIA_REMOTE_K_PROVIDER": "local", "BUCKIA_REMOTE_K_ROOT": root.path]
        let fetched = try await Self.buckia(["fetch", "k:docs/a.txt", "--json"], home: home, extra: remote)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(fetched.stdout.utf8)) as? [String: Any], "\(fetched)")
        #expect(object["outcome"] as? String == "downloaded" && object["bytes"] as? Int == 12)
        let path = try #require(object["path"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("remote bytes".utf8))
    }

    @Test("A 304 with new headers, through the command line: revalidated, and fresh by the 304's Cache-Control")
    func revalidatedByCommand() async throws {
        let origin = try Origin()
        let home = try Self.home()
        defer { Self.remove(home) }
        try await origin.set("v", ["cache_control": "max-age=0", "cache_control_304": "max-age=600", "size": 500])
        let url = try origin.url("v").absoluteString
        let first = try await Self.buckia(["fetch", url, "--json"], home: home)
        let second = try await Self.buckia(["fetch", url, "--json"], home: home)
        let third = try await Self.buckia(["fetch", url], home: home)
        func outcome(_ run: Run) throws -> String? {
            try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")["outcome"] as? String
        }
        #expect(try outcome(first) == "downloaded")
        #expect(try outcome(second) == "revalidated")
        #expect(third.stdout.hasPrefix("hit  "), "\(third)")
        #expect(try await origin.counts("v") == Origin.Counts(full: 1, not_modified: 1, errors: 0))
    }

    @Test("cache trim --max-bytes evicts the least recently used down to the limit")
    func trimToLimit() async throws {
        let origin = try Origin()
        let home = try Self.home()
        defer { Self.remove(home) }
        for id in ["old", "new"] { try await origin.set(id, ["cache_control": "max-age=600", "size": 300]) }
        let old = try await Self.buckia(["fetch", origin.url("old").absoluteString], home: home)
        _ = try await Self.buckia(["fetch", origin.url("new").absoluteString], home: home)
        #expect(try await Self.buckia(["cache", "trim", "--max-bytes", "400"], home: home).stdout == "Evicted 1 entry (300 bytes).\n")
        #expect(!FileManager.default.fileExists(atPath: String(old.stdout.dropFirst("downloaded  ".count).dropLast())))
        #expect(try await Self.buckia(["cache", "trim", "--max-count", "0"], home: home).stdout == "Evicted 1 entry (300 bytes).\n")
    }

    @Test(
        "A URL of another scheme, a bare word, an unknown cache action or a bad limit is a usage error",
        arguments: [["fetch", "ftp://x.example/a"], ["fetch", "nothing"], ["cache", "explode"], ["cache", "trim", "--max-bytes", "1e9"], ["cache", "stats", "--max-count", "1"]])
    func usageErrors(_ arguments: [String]) async throws {
        let home = try Self.home()
        defer { Self.remove(home) }
        let run = try await Self.buckia(arguments, home: home)
        #expect(run.status == 2, "\(run)")
    }
}
