import Buckia
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The kill harness: the built `buckia` is killed with SIGKILL at random moments of a big-file
/// copy, a tree copy (each way) and a loop of `kv put`s, and after each kill and after the rerun
/// the harness checks what Reliability.md promises: no partial file at a destination, every
/// acknowledged write present and intact, and no temporary left once a rerun has swept.
///
/// A moment is random in *progress*, not in time: the copy is killed once a random number of
/// bytes (or files) has reached the destination side, which spreads the kills over the whole
/// copy on any machine. The `kv put` loop kills the n-th put a random number of microseconds
/// after it starts. The seed is printed; `BUCKIA_KILL_SEED` replays it.
@Suite("Kill harness: SIGKILL at random moments, then check and rerun")
struct KillHarnessTests {
    static let kills = 20

    enum Scenario: String, CaseIterable, CustomTestStringConvertible {
        case bigUpload = "cp big file to a local remote"
        case bigDownload = "cp big file from a local remote"
        case treeUpload = "cp -r tree to a local remote"
        case treeDownload = "cp -r tree from a local remote"
        case sqlitePuts = "kv put loop, sqlite engine"
        case diskPuts = "kv put loop, disk engine"
        case sqliteImport = "kv import in batches, sqlite engine"
        case diskImport = "kv import in batches, disk engine"
        var testDescription: String { rawValue }

        /// What follows each kill, for the report.
        var checks: String {
            switch self {
            case .bigUpload, .bigDownload, .treeUpload, .treeDownload:
                "no partial file at the destination; the rerun leaves exact copies and no temporary"
            case .sqlitePuts, .diskPuts: "every acknowledged put intact, the killed one absent or whole; no temporary after the rerun"
            case .sqliteImport, .diskImport:
                "every acknowledged batch whole, every value intact, batches all or nothing where the engine declares atomicBatches; the rerun stores every value"
            }
        }
    }

    /// What one scenario's kills found.
    struct Tally: CustomStringConvertible {
        var kills = 0
        var midRun = 0
        var leftByKill = 0
        var violations: [String] = []
        var description: String {
            "\(kills) kills (\(midRun) mid-run, \(kills - midRun) after it had finished), \(leftByKill) temporaries left by kills, "
                + "\(violations.count) violations"
        }
    }

    @Test("Killed at 20 random moments: no partial file, no lost acknowledged write, no temporary after the rerun", arguments: Scenario.allCases)
    func killAndRerun(_ scenario: Scenario) async throws {
        let seed = ProcessInfo.processInfo.environment["BUCKIA_KILL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        var random = SplitMix64(seed: seed ^ UInt64(scenario.rawValue.utf8.count))
        let world = try KillWorld()
        var tally = Tally()
        switch scenario {
        case .bigUpload, .bigDownload: try await world.bigFile(download: scenario == .bigDownload, random: &random, tally: &tally)
        case .treeUpload, .treeDownload: try await world.tree(download: scenario == .treeDownload, random: &random, tally: &tally)
        case .sqlitePuts: try await world.puts(engine: "sqlite", random: &random, tally: &tally)
        case .diskPuts: try await world.puts(engine: "disk", random: &random, tally: &tally)
        case .sqliteImport: try await world.imports(engine: "sqlite", random: &random, tally: &tally)
        case .diskImport: try await world.imports(engine: "disk", random: &random, tally: &tally)
        }
        print("kill harness: \(scenario.rawValue): \(tally) (seed \(seed))")
        KillReport(
            component: scenario.rawValue, kills: tally.kills, midRun: tally.midRun, violations: tally.violations.count, seed: seed,
            checks: scenario.checks
        ).write()
        #expect(tally.kills == Self.kills)
        // A harness whose kills all land after the work is done checks nothing.
        #expect(tally.midRun >= Self.kills / 2, "only \(tally.midRun) of \(tally.kills) kills landed mid-run")
        #expect(tally.violations.isEmpty, "seed \(seed): \(tally.violations.joined(separator: "; "))")
    }
}

/// A private home with a local remote `k:` and the files the scenarios copy.
final class KillWorld {
    let home: URL
    let root: URL
    let environment: [String: String]

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-kill-\(UUID().uuidString)")
        root = home.appendingPathComponent("remote")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        environment = BackgroundHome.environment(home: home, ["BUCKIA_REMOTE_K_PROVIDER": "local", "BUCKIA_REMOTE_K_ROOT": root.path])
        try FileManager.default.createDirectory(at: home.appendingPathComponent("tmp"), withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: home) }

    // MARK: Running and killing

    /// Runs `buckia` to completion (bounded: a run over two minutes is killed and fails).
    func run(_ arguments: [String], input: URL? = nil) throws -> (status: Int32, stdout: Data) {
        let output = home.appendingPathComponent("tmp/stdout-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let process = try start(arguments, stdout: output)
        let status = try wait(process, upTo: .seconds(120))
        return (status, try Data(contentsOf: output))
    }

    func start(_ arguments: [String], stdout: URL? = nil) throws -> Spawned {
        try Spawned(CLIHarness.executable, arguments, environment: environment, directory: home, output: stdout.map { .file($0) } ?? .null)
    }

    /// Waits for `process`; one still running after `limit` is killed and reported.
    @discardableResult
    func wait(_ process: Spawned, upTo limit: Duration) throws -> Int32 {
        guard process.wait(limit) else {
            process.stop()
            throw HarnessError(description: "\(process.command) ran past \(limit)")
        }
        return process.status
    }

    /// Starts `arguments`, kills it with SIGKILL once `reached()` says so (polled every
    /// millisecond), and returns whether the kill landed while it ran.
    func kill(_ arguments: [String], when reached: () -> Bool) throws -> Bool {
        let process = try start(arguments)
        process.watch(until: reached)
        process.stop()
        return process.termination == .signalled(SIGKILL)
    }

    // MARK: Looking at the file system

    /// Buckia temporaries anywhere under `folder`, and the largest one's size.
    func temporaries(under folder: URL) -> (count: Int, largest: Int64, names: [String]) {
        var names: [String] = []
        var largest: Int64 = 0
        for (url, size) in files(under: folder) where isTemporary(url.lastPathComponent) {
            names.append("\(url.path.dropFirst(home.path.count)) (\(size) bytes; \(Self.describe(url)))")
            largest = max(largest, size)
        }
        return (names.count, largest, names)
    }

    func isTemporary(_ name: String) -> Bool { Temporaries.isTemporaryName(Array(name.utf8)) }

    /// What a sweep looks at: the file's times, and whether a process holds its lock — so a
    /// temporary that outlives a rerun says why the sweep left it.
    static func describe(_ url: URL) -> String {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return "cannot open: errno \(errno)" }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return "cannot stat" }
        let locked = flock(fd, LOCK_SH | LOCK_NB) != 0
        if !locked { _ = flock(fd, LOCK_UN) }
        return "mode \(String(info.st_mode & 0o7777, radix: 8)), mtime \(info.st_mtim.tv_sec), ctime \(info.st_ctim.tv_sec), now \(time(nil)), \(locked ? "locked" : "unlocked")"
    }

    /// Every regular file under `folder`, with its size (links are not followed).
    func files(under folder: URL) -> [(url: URL, size: Int64)] {
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey, .fileSizeKey]) else { return [] }
        var found: [(URL, Int64)] = []
        for case let url as URL in walker {
            guard let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey]), values.isRegularFile == true else { continue }
            found.append((url, Int64(values.fileSize ?? 0)))
        }
        return found
    }

    func same(_ a: URL, _ b: URL) -> Bool {
        guard let left = try? Data(contentsOf: a, options: .alwaysMapped), let right = try? Data(contentsOf: b, options: .alwaysMapped) else { return false }
        return left == right
    }

    func randomFile(_ url: URL, size: Int) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let source = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
        defer { try? source.close() }
        try (try source.read(upToCount: size) ?? Data()).write(to: url)
    }

    // MARK: Scenarios

    /// A 32 MiB file, killed at a random byte of its copy.
    func bigFile(download: Bool, random: inout SplitMix64, tally: inout KillHarnessTests.Tally) async throws {
        let size = 32 << 20
        let source = home.appendingPathComponent("src/big.bin")
        try randomFile(source, size: size)
        let down = home.appendingPathComponent("down")
        if download {
            guard try run(["cp", source.path, "k:big.bin"]).status == 0 else { throw HarnessError(description: "seeding k:big.bin failed") }
        }
        let destination = download ? down.appendingPathComponent("big.bin") : root.appendingPathComponent("big.bin")
        let arguments = download ? ["cp", "k:big.bin", destination.path] : ["cp", source.path, "k:big.bin"]
        let temporaryArea = download ? down : root.appendingPathComponent(".buckia")
        for trial in 0..<KillHarnessTests.kills {
            // Past the size: kill after it finished (the harness must allow every moment).
            let threshold = Int64.random(in: 0..<(Int64(size) + Int64(size / 8)), using: &random)
            let midRun = try kill(arguments) {
                FileManager.default.fileExists(atPath: destination.path) || temporaries(under: temporaryArea).largest >= threshold
            }
            tally.kills += 1
            if midRun { tally.midRun += 1 }
            tally.leftByKill += temporaries(under: temporaryArea).count
            if FileManager.default.fileExists(atPath: destination.path) && !same(destination, source) {
                tally.violations.append("trial \(trial): a partial \(destination.lastPathComponent) after the kill")
            }
            let rerun = try run(arguments)
            if rerun.status != 0 { tally.violations.append("trial \(trial): the rerun exited \(rerun.status)") }
            if !same(destination, source) { tally.violations.append("trial \(trial): the rerun did not leave an exact copy") }
            let left = temporaries(under: temporaryArea)
            if left.count > 0 { tally.violations.append("trial \(trial): temporaries after the rerun: \(left.names.joined(separator: ", "))") }
            try FileManager.default.removeItem(at: destination)
        }
    }

    /// A tree of 60 files (0 to 256 KiB) in three levels, killed after a random number of
    /// its files reached the destination.
    func tree(download: Bool, random: inout SplitMix64, tally: inout KillHarnessTests.Tally) async throws {
        let source = home.appendingPathComponent("src/tree")
        var names: [String] = []
        for index in 0..<60 {
            let name = "d\(index % 3)/e\(index % 5)/f\(index).bin"
            try randomFile(source.appendingPathComponent(name), size: Int.random(in: 0...(256 << 10), using: &random))
            names.append(name)
        }
        if download {
            guard try run(["cp", "-r", source.path, "k:tree"]).status == 0 else { throw HarnessError(description: "seeding k:tree failed") }
        }
        let destination = download ? home.appendingPathComponent("down/tree") : root.appendingPathComponent("tree")
        let arguments = download ? ["cp", "-r", "k:tree", destination.path] : ["cp", "-r", source.path, "k:tree"]
        let temporaryArea = download ? destination : root.appendingPathComponent(".buckia")
        func copied() -> [String] {
            files(under: destination).map(\.url.path).filter { !isTemporary(URL(fileURLWithPath: $0).lastPathComponent) }
                .map { String($0.dropFirst(destination.path.count + 1)) }
        }
        for trial in 0..<KillHarnessTests.kills {
            // Mostly while the copy runs (in its first three quarters: a kill aimed at the last
            // files often landed after a fast copy had ended, and under load fewer than half the
            // kills were mid-run), and one trial in ten after the end.
            let threshold = Int.random(in: 0..<10, using: &random) == 0
                ? Int.random(in: (names.count + 1)...(names.count + 6), using: &random)
                : Int.random(in: 0...(names.count * 3 / 4), using: &random)
            let midRun = try kill(arguments) { copied().count >= threshold }
            tally.kills += 1
            if midRun { tally.midRun += 1 }
            tally.leftByKill += temporaries(under: temporaryArea).count
            for name in copied() where !same(destination.appendingPathComponent(name), source.appendingPathComponent(name)) {
                tally.violations.append("trial \(trial): \(name) is not an exact copy after the kill")
            }
            let rerun = try run(arguments)
            if rerun.status != 0 { tally.violations.append("trial \(trial): the rerun exited \(rerun.status)") }
            let after = copied()
            if Set(after) != Set(names) { tally.violations.append("trial \(trial): the rerun left \(after.count) of \(names.count) files") }
            for name in after where !same(destination.appendingPathComponent(name), source.appendingPathComponent(name)) {
                tally.violations.append("trial \(trial): \(name) is not an exact copy after the rerun")
            }
            let left = temporaries(under: temporaryArea)
            if left.count > 0 { tally.violations.append("trial \(trial): temporaries after the rerun: \(left.names.joined(separator: ", "))") }
            try FileManager.default.removeItem(at: destination)
        }
    }

    /// Loops of `kv put`: each trial runs a few puts to completion (acknowledged), then kills
    /// the next one a random number of microseconds after it starts.
    func puts(engine: String, random: inout SplitMix64, tally: inout KillHarnessTests.Tally) async throws {
        let folder = home.appendingPathComponent("kv-\(engine)")
        let base = ["kv", "--engine", engine, "--path", folder.path, "put"]
        func value(_ index: Int) -> String { String(repeating: "value \(index) ", count: 40 + (index * 97) % 2_000) }
        var acknowledged: [Int] = []
        var next = 0
        for trial in 0..<KillHarnessTests.kills {
            var shortest = Duration.seconds(3600)
            for _ in 0..<Int.random(in: 2...4, using: &random) {
                let started = ContinuousClock.now
                let put = try run(base + ["k\(next)", value(next)])
                shortest = min(shortest, ContinuousClock.now - started)
                guard put.status == 0 else { throw HarnessError(description: "put k\(next) exited \(put.status)") }
                acknowledged.append(next)
                next += 1
            }
            // A moment within what a put takes on this machine (timed from spawn to exit, so
            // the kill can still land after the put is done: that moment counts too).
            let delay = shortest * Double.random(in: 0..<0.9, using: &random)
            let started = ContinuousClock.now
            let midRun = try kill(base + ["k\(next)", value(next)]) { ContinuousClock.now - started >= delay }
            tally.kills += 1
            if midRun { tally.midRun += 1 }
            tally.leftByKill += temporaries(under: folder).count
            // After the kill: every acknowledged value intact; the killed one absent or intact.
            let stored = try await read(engine: engine, folder: folder)
            for index in acknowledged where stored["k\(index)"] != Data(value(index).utf8) {
                tally.violations.append("trial \(trial): acknowledged k\(index) is \(stored["k\(index)"] == nil ? "missing" : "wrong") after the kill")
            }
            if let killed = stored["k\(next)"], killed != Data(value(next).utf8) {
                tally.violations.append("trial \(trial): the killed put left wrong bytes for k\(next)")
            }
            // The rerun puts the killed key again.
            let rerun = try run(base + ["k\(next)", value(next)])
            if rerun.status != 0 { tally.violations.append("trial \(trial): the rerun exited \(rerun.status)") }
            acknowledged.append(next)
            next += 1
            let after = try await read(engine: engine, folder: folder)
            if after.count != acknowledged.count { tally.violations.append("trial \(trial): \(after.count) keys after the rerun, \(acknowledged.count) written") }
            let left = temporaries(under: folder)
            if left.count > 0 { tally.violations.append("trial \(trial): temporaries after the rerun: \(left.names.joined(separator: ", "))") }
        }
    }

    /// `kv import` of 16 batches of 150 values, killed once it has written a random number of
    /// bytes; a batch is acknowledged by a line on its standard output, written once it is
    /// stored.
    /// After the kill: every acknowledged batch whole, every value present intact, and on an
    /// engine that declares ``EngineCapability/atomicBatches`` every batch all or nothing.
    /// The rerun imports the same file again and must leave every value.
    func imports(engine: String, random: inout SplitMix64, tally: inout KillHarnessTests.Tally) async throws {
        let folder = home.appendingPathComponent("kv-import-\(engine)")
        let (batches, perBatch) = (16, 150)
        var expected: [String: Data] = [:]
        var atomic = false
        for trial in 0..<KillHarnessTests.kills {
            // A file of its own each trial, so every kill lands in new work.
            var lines: [String] = []
            var batchOf: [String: Int] = [:]
            for index in 0..<(batches * perBatch) {
                let key = "t\(trial)/k\(index)"
                let size = Int.random(in: 0...3_000, using: &random)
                let text = String((0..<size).map { _ in Character(UnicodeScalar(UInt8.random(in: 32...126, using: &random))) })
                let line = try JSONSerialization.data(withJSONObject: ["key": key, "value": text], options: [.sortedKeys])
                lines.append(String(decoding: line, as: UTF8.self))
                expected[key] = Data(text.utf8)
                batchOf[key] = index / perBatch
            }
            let input = home.appendingPathComponent("tmp/import-\(trial).jsonl")
            try Data(lines.joined(separator: "\n").utf8).write(to: input)
            let arguments = ["kv", "--engine", engine, "--path", folder.path, "import", input.path, "--batch", "\(perBatch)", "--json"]
            let output = home.appendingPathComponent("tmp/import-\(trial).out")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            func acknowledged() -> Int {
                ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains(#""event":"batch""#) }.count
            }
            // A moment in what the import writes (its own count of bytes written, /proc/PID/io:
            // the engine's writes, nearly all of it), so the kill lands inside a batch's writes
            // as often as they take bytes, not while lines are parsed; one trial in ten after
            // the end.
            let written = expected.filter { $0.key.hasPrefix("t\(trial)/") }.reduce(0) { $0 + $1.value.count }
            let threshold = Int.random(in: 0..<10, using: &random) == 0 ? Int.max : Int.random(in: 0..<written, using: &random)
            let process = try start(arguments, stdout: output)
            let deadline = ContinuousClock.now + .seconds(120)
            while process.isRunning, ContinuousClock.now < deadline, (process.bytesWritten ?? Int.max) < threshold { usleep(200) }
            process.stop()
            tally.kills += 1
            if process.termination == .signalled(SIGKILL) { tally.midRun += 1 }
            let done = acknowledged()
            let (stored, capabilities) = try await readWithCapabilities(engine: engine, folder: folder)
            atomic = capabilities.contains(.atomicBatches)
            var present = [Int](repeating: 0, count: batches)
            for (key, value) in expected where key.hasPrefix("t\(trial)/") {
                guard let found = stored[key] else {
                    if let batch = batchOf[key], batch < done { tally.violations.append("trial \(trial): \(key) of acknowledged batch \(batch) is missing") }
                    continue
                }
                if found != value { tally.violations.append("trial \(trial): \(key) holds wrong bytes after the kill") }
                if let batch = batchOf[key] { present[batch] += 1 }
            }
            if atomic {
                for (batch, count) in present.enumerated() where count != 0 && count != perBatch {
                    tally.violations.append("trial \(trial): batch \(batch) is \(count) of \(perBatch) values after the kill")
                }
            }
            let rerun = try run(arguments)
            if rerun.status != 0 { tally.violations.append("trial \(trial): the rerun exited \(rerun.status)") }
            let after = try await read(engine: engine, folder: folder)
            if after != expected { tally.violations.append("trial \(trial): after the rerun \(after.count) values, \(expected.count) expected, \(after.filter { expected[$0.key] != $0.value }.count) differ") }
            let left = temporaries(under: folder)
            if left.count > 0 { tally.violations.append("trial \(trial): temporaries after the rerun: \(left.names.joined(separator: ", "))") }
        }
        print("kill harness: kv import, \(engine) engine: batches checked as \(atomic ? "all or nothing (atomicBatches)" : "values each whole")")
    }

    /// ``read(engine:folder:)`` with the engine's declared capabilities.
    func readWithCapabilities(engine: String, folder: URL) async throws -> ([String: Data], Set<EngineCapability>) {
        let store = try await EngineRegistry.builtIn.makeEngine(for: EngineConfiguration(type: EngineType(rawValue: engine), directory: folder.path))
        var values: [String: Data] = [:]
        for (key, data) in try await store.readAllDataAndKeys() { values[key.value] = data }
        return (values, store.capabilities)
    }

    /// Everything in the engine, read in this process (every read checks its CRC).
    func read(engine: String, folder: URL) async throws -> [String: Data] {
        try await readWithCapabilities(engine: engine, folder: folder).0
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
}
