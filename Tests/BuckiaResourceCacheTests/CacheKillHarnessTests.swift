import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `buckia fetch` processes killed (SIGKILL) mid-download and at the other moments of a fetch,
/// and a cache on a full file system: nothing partial is ever served, what a killed process
/// left is removed by the next one, and a full disk is a clear error that costs no entry.
@Suite("Resource cache: killed processes and a full disk")
struct CacheKillHarnessTests {
    static var executable: URL { URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia") }

    /// Starts `buckia` with `arguments` and a private home; standard output and error to files.
    static func start(_ arguments: [String], home: URL) throws -> Spawned {
        try Spawned(executable, arguments, environment: FetchCommandTests.environment(home: home))
    }

    /// Waits for `condition`, checking every millisecond for at most `seconds`: the event is
    /// another process's, with nothing to wait on but the file system.
    static func poll(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            usleep(1000)
        }
        return condition()
    }

    /// The bytes of the regular files under `folder`, recursively (a file removed while
    /// being counted counts nothing).
    static func bytes(under folder: URL) -> Int64 {
        guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return 0 }
        var total: Int64 = 0
        for case let name as String in walker {
            var info = stat()
            if lstat(folder.appendingPathComponent(name).path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { total += Int64(info.st_size) }
        }
        return total
    }

    /// Names in `folder` other than the cache's own (`.buckia-…`): the entries' files; none
    /// while the folder does not exist yet.
    static func entryFiles(_ folder: URL) throws -> [String] {
        guard FileManager.default.fileExists(atPath: folder.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".buckia-") }
    }

    /// What the scripted origin sends for `id` at version 1.
    static func body(_ id: String, size: Int) -> Data {
        let unit = Array("\(id) v1 ".utf8)
        return Data((0..<size).map { unit[$0 % unit.count] })
    }

    /// The JSON `buckia fetch --json` printed.
    static func object(_ run: FetchCommandTests.Run) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
    }

    @Test("buckia fetch killed halfway through a body: no entry, and the next run downloads it whole and removes what the killed one left", .timeLimit(.minutes(10)))
    func killedMidBody() async throws {
        let origin = try Origin()
        let home = try FetchCommandTests.home()
        defer { FetchCommandTests.remove(home) }
        let cache = home.appendingPathComponent("c")
        let temporaries = cache.appendingPathComponent(".buckia-tmp")
        let size = 4 << 20
        // Half the body, then held until the test lets it go: the kill lands while it waits,
        // however long a loaded machine takes to see the bytes (a timed pause could end first).
        try await origin.set("big", ["cache_control": "max-age=600", "size": size, "gate": true])
        let url = try origin.url("big").absoluteString
        let process = try Self.start(["fetch", url, "--cache", cache.path], home: home)
        let written = try await offPool { Self.poll(seconds: 600) { Self.bytes(under: temporaries) > 0 } }
        process.stop()
        try await origin.release("big")
        #expect(written, "the download never wrote a byte")
        #expect(process.termination == .signalled(SIGKILL))
        let left = Self.bytes(under: temporaries)
        #expect(left > 0 && left < Int64(size), "the killed download left \(left) bytes in .buckia-tmp")
        let named = try Self.entryFiles(cache)
        #expect(named.isEmpty, "a file under an entry's name: \(named)")
        try await origin.set("big", ["cache_control": "max-age=600", "size": size])
        // The killed run asked at least once (on a starved machine its client may have asked
        // again after a stall); the rerun asks exactly once more.
        let before = try await origin.counts("big").full
        #expect(before >= 1)
        let rerun = try await FetchCommandTests.buckia(["fetch", url, "--cache", cache.path, "--json"], home: home)
        let object = try Self.object(rerun)
        #expect(object["outcome"] as? String == "downloaded", "the half-written download was served: \(rerun)")
        let path = try #require(object["path"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Self.body("big", size: size))
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporaries.path).isEmpty, "left in .buckia-tmp after the rerun")
        let after = try await origin.counts("big").full
        #expect(after == before + 1, "full requests: \(before) before the rerun, \(after) after")
    }

    /// The moments a kill lands at: when the origin has the request, once the download has
    /// written bytes, once the entry's file is in place.
    enum Moment: String, CaseIterable, Sendable {
        case requested, writing, placed
    }

    @Test("buckia fetch killed when the request arrives, while writing, and once the file is placed: the next run serves exact bytes or downloads", .timeLimit(.minutes(10)), arguments: Moment.allCases)
    func killedAtEachMoment(_ moment: Moment) async throws {
        let origin = try Origin()
        let home = try FetchCommandTests.home()
        defer { FetchCommandTests.remove(home) }
        let cache = home.appendingPathComponent("c")
        let temporaries = cache.appendingPathComponent(".buckia-tmp")
        let size = 2 << 20
        var outcomes: [String: Int] = [:]
        var (landed, broken) = (0, 0)
        for round in 0..<3 {
            let id = "r\(round)"
            // Held before the body, or halfway through it, until the test lets it go, so the
            // kill lands there however slowly a loaded machine gets the test to it.
            let hold: [String: Any] = moment == .requested ? ["gate": true, "gate_at": "start"] : moment == .writing ? ["gate": true] : [:]
            try await origin.set(id, ["cache_control": "max-age=600", "size": size].merging(hold) { $1 })
            let url = try origin.url(id).absoluteString
            let process = try Self.start(["fetch", url, "--cache", cache.path], home: home)
            let reached: Bool
            switch moment {
            case .requested: reached = try await origin.await(id, full: 1).full == 1
            case .writing: reached = try await offPool { Self.poll(seconds: 600) { Self.bytes(under: temporaries) > 0 } }
            case .placed:
                reached = try await offPool {
                    Self.poll(seconds: 600) {
                        do { return try Self.entryFiles(cache).count > round } catch { return false }  // read again at the next poll
                    }
                }
            }
            process.stop()
            if moment != .placed { try await origin.release(id) }
            #expect(reached, "round \(round): the kill did not land \(moment.rawValue)")
            if reached && process.termination == .signalled(SIGKILL) { landed += 1 }
            try await origin.set(id, ["cache_control": "max-age=600", "size": size])
            let rerun = try await FetchCommandTests.buckia(["fetch", url, "--cache", cache.path, "--json"], home: home)
            let object = try Self.object(rerun)
            let outcome = object["outcome"] as? String ?? "?"
            outcomes[outcome, default: 0] += 1
            let path = try #require(object["path"] as? String)
            let exact = try Data(contentsOf: URL(fileURLWithPath: path)) == Self.body(id, size: size)
            let left = try FileManager.default.contentsOfDirectory(atPath: temporaries.path)
            #expect(["hit", "downloaded"].contains(outcome), "\(rerun)")
            #expect(exact, "round \(round): wrong bytes after a kill \(moment.rawValue)")
            #expect(left.isEmpty, "round \(round): left in .buckia-tmp: \(left)")
            if !["hit", "downloaded"].contains(outcome) || !exact || !left.isEmpty { broken += 1 }
        }
        print("resource cache kill harness, killed \(moment.rawValue): reruns \(outcomes)")
        KillReport(
            component: "resource cache fetch, killed \(moment.rawValue)", kills: 3, midRun: landed, violations: broken, seed: 0,
            checks: "the next fetch serves exact bytes (a hit only once the entry was placed), nothing left in .buckia-tmp"
        ).write()
        if moment != .placed { #expect(outcomes == ["downloaded": 3], "a kill before the entry was placed, yet the rerun found one: \(outcomes)") }
    }

    @Test("A full file system: the download that does not fit is a clear error; what was cached stays, and nothing is left behind", .timeLimit(.minutes(10)))
    func fullDisk() async throws {
        let origin = try Origin()
        let home = try FetchCommandTests.home()
        defer { FetchCommandTests.remove(home) }
        try await origin.set("small", ["cache_control": "max-age=600", "size": 10_000])
        try await origin.set("large", ["cache_control": "max-age=600", "size": 3 << 20])
        let cache = home.appendingPathComponent("c")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        // In a mount namespace of its own, the cache folder is a 1 MiB tmpfs: full for real.
        let script = """
            set -u
            mount -t tmpfs -o size=1m buckia-full "$CACHE" || exit 97
            run() { "$BUCKIA" fetch "$1" --cache "$CACHE" --json > "$OUT/$2.out" 2> "$OUT/$2.err"; echo $? > "$OUT/$2.status"; }
            run "$SMALL" small
            run "$LARGE" large
            run "$SMALL" again
            ls -A "$CACHE/.buckia-tmp" > "$OUT/left.txt"
            cat "$CACHE"/*_small > "$OUT/small.bytes"
            """
        let environment = [
            "CACHE": cache.path, "BUCKIA": Self.executable.path, "OUT": home.path, "SMALL": try origin.url("small").absoluteString,
            "LARGE": try origin.url("large").absoluteString, "HOME": home.path, "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
        ]
        let run = try await offPool {
            try ToolRun.run(path: URL(fileURLWithPath: "/usr/bin/unshare"), ["--mount", "--map-root-user", "sh", "-c", script], exactEnvironment: environment, limit: .seconds(120))
        }
        #expect(run.status == 0, "the namespace with a full file system could not be made (unshare and mount need user namespaces): \(run.errors)")
        func read(_ name: String) -> String {
            do {
                return try String(contentsOf: home.appendingPathComponent(name), encoding: .utf8)
            } catch {
                return "(\(name) unreadable: \(error))"
            }
        }
        #expect(read("small.status") == "0\n", "\(read("small.err"))")
        #expect(read("large.status") == "1\n", "the large fetch: \(read("large.out")) \(read("large.err"))")
        #expect(read("large.err").contains("No space left"), "\(read("large.err"))")
        #expect(read("again.status") == "0\n" && read("again.out").contains("\"outcome\":\"hit\""), "\(read("again.out")) \(read("again.err"))")
        #expect(read("small.bytes") == String(decoding: Self.body("small", size: 10_000), as: UTF8.self))
        #expect(read("left.txt").isEmpty, "left in .buckia-tmp: \(read("left.txt"))")
        #expect(try await origin.counts("small").full == 1)
    }
}
