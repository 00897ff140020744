import Buckia
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `buckia sync` killed with SIGKILL at 20 random moments of each mode, between a local
/// folder and a local remote, each kill followed by a rerun. Each trial changes both sides
/// first (new, edited and deleted files; in two-way on both sides at once), so every run has
/// work to be killed in. After each kill: no file at either side is partial (each is a version
/// the trial started with or the one it is syncing towards) and the state store opens clean.
/// After each rerun: both sides hold exactly what the model says, and no temporary is left.
@Suite("Sync kill harness: SIGKILL at random moments of push, pull and two-way")
struct SyncKillHarnessTests {
    static let kills = 20

    @Test("Killed at 20 random moments, each rerun converges with an intact state store and no partial file", arguments: SyncMode.allCases)
    func killAndRerun(_ mode: SyncMode) throws {
        let seed = ProcessInfo.processInfo.environment["BUCKIA_KILL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        var random = SplitMix64(seed: seed ^ UInt64(mode.rawValue.utf8.count))
        let world = try SyncWorld(mode: mode)
        var kills = 0, midRun = 0
        var violations: [String] = []
        try world.seed(random: &random)
        for trial in 0..<Self.kills {
            let before = world.snapshot()
            let changes = try world.change(random: &random)
            let threshold = Int.random(in: 0...(changes + 3), using: &random)
            let killedMidRun = try world.kill { world.arrived() >= threshold }
            kills += 1
            if killedMidRun { midRun += 1 }
            violations += world.partialFiles(allowed: before).map { "trial \(trial): \($0) after the kill" }
            if let problem = world.stateStoreProblem() { violations.append("trial \(trial): state store after the kill: \(problem)") }
            let rerun = try world.run(world.syncArguments)
            if rerun != 0 { violations.append("trial \(trial): the rerun exited \(rerun)") }
            violations += world.differences().map { "trial \(trial): after the rerun \($0)" }
            if let problem = world.stateStoreProblem() { violations.append("trial \(trial): state store after the rerun: \(problem)") }
            let left = world.temporaries()
            if !left.isEmpty { violations.append("trial \(trial): temporaries after the rerun: \(left.joined(separator: ", "))") }
        }
        print("sync kill harness: \(mode.rawValue): \(kills) kills (\(midRun) mid-run), \(violations.count) violations (seed \(seed))")
        KillReport(
            component: "sync \(mode.rawValue)", kills: kills, midRun: midRun, violations: violations.count, seed: seed,
            checks: "no partial file on either side, the state store opens clean; the rerun converges to the model with no temporary"
        ).write()
        #expect(kills == Self.kills)
        #expect(midRun >= Self.kills / 2, "only \(midRun) of \(kills) kills landed mid-run")
        #expect(violations.isEmpty, "seed \(seed): \(violations.prefix(10).joined(separator: "; "))")
    }
}

/// A local folder, a local remote `k:` over another folder, and the model of what both must
/// hold once a sync has run to the end.
private final class SyncWorld {
    let mode: SyncMode
    let home: URL
    let local: URL
    let remote: URL
    let environment: [String: String]
    /// Path → content, as both sides must hold after a complete run.
    var model: [String: Data] = [:]
    private var counter = 0

    init(mode: SyncMode) throws {
        self.mode = mode
        home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sync-kill-\(UUID().uuidString)")
        local = home.appendingPathComponent("local")
        remote = home.appendingPathComponent("remote-root/tree")
        for folder in [local, remote, home.appendingPathComponent("tmp")] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        environment = BackgroundHome.environment(home: home, ["BUCKIA_REMOTE_K_PROVIDER": "local", "BUCKIA_REMOTE_K_ROOT": home.appendingPathComponent("remote-root").path])
    }

    deinit { try? FileManager.default.removeItem(at: home) }

    /// One-way runs name the source first (a pull is `sync k:tree LOCAL`); two-way names both.
    var syncArguments: [String] {
        switch mode {
        case .push: ["sync", local.path, "k:tree", "--delete"]
        case .pull: ["sync", "k:tree", local.path, "--delete"]
        case .twoWay: ["sync", local.path, "k:tree", "--mode", "two-way", "--delete"]
        }
    }

    /// Where changes start and where they must arrive, by mode.
    var sources: [URL] { mode == .push ? [local] : mode == .pull ? [remote] : [local, remote] }
    var destinations: [URL] { mode == .push ? [remote] : mode == .pull ? [local] : [local, remote] }

    // MARK: Running

    /// Runs to completion, bounded: a run past two minutes is killed and fails the test.
    func run(_ arguments: [String]) throws -> Int32 {
        try BuckiaProcess(arguments, home: home, environment: environment).wait(polls: 12_000)
    }

    /// Starts a sync and kills it once `reached()` says so (bounded: two minutes of polls);
    /// whether it was still running.
    func kill(when reached: () -> Bool) throws -> Bool {
        let running = try BuckiaProcess(syncArguments, home: home, environment: environment)
        _ = running.poll(until: reached, polls: 120_000)
        return running.killed()
    }

    // MARK: Changing and looking

    func seed(random: inout SplitMix64) throws {
        for _ in 0..<40 { try create(on: sources[0], random: &random) }
        guard try run(syncArguments) == 0 else { throw HarnessError(description: "the first sync failed") }
        let problems = differences()
        guard problems.isEmpty else { throw HarnessError(description: "the first sync left differences: \(problems)") }
    }

    /// Creates, edits and deletes files on the source side(s) and updates the model; returns
    /// how many files the next run must carry.
    func change(random: inout SplitMix64) throws -> Int {
        var changes = 0
        // Files both sides held when the trial began; in two-way each side edits half of them
        // (disjoint halves, so no change is a conflict).
        let existing = model.keys.sorted()
        for (index, side) in sources.enumerated() {
            let mine = existing.enumerated().filter { sources.count == 1 || $0.offset % 2 == index }.map(\.element)
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                try create(on: side, random: &random)
                changes += 1
            }
            for path in mine.shuffled(using: &random).prefix(Int.random(in: 1...5, using: &random)) {
                let data = Self.bytes(count: Int.random(in: 0...(192 << 10), using: &random), random: &random)
                try write(data, path, on: side)
                changes += 1
            }
            for path in mine.shuffled(using: &random).prefix(Int.random(in: 0...2, using: &random)) where model[path] != nil {
                try FileManager.default.removeItem(at: side.appendingPathComponent(path))
                model[path] = nil
                changes += 1
            }
        }
        return changes
    }

    private func create(on side: URL, random: inout SplitMix64) throws {
        counter += 1
        let path = "d\(counter % 3)/e\(counter % 4)/f\(counter).bin"
        try write(Self.bytes(count: Int.random(in: 0...(256 << 10), using: &random), random: &random), path, on: side)
    }

    private func write(_ data: Data, _ path: String, on side: URL) throws {
        let url = side.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
        model[path] = data
    }

    static func bytes(count: Int, random: inout SplitMix64) -> Data {
        var data = Data(count: count)
        var word = random.next()
        for offset in 0..<count {
            if offset % 8 == 0 { word = random.next() }
            data[offset] = UInt8(truncatingIfNeeded: word >> ((offset % 8) * 8))
        }
        return data
    }

    /// Every file under `folder` that is not Buckia's own (its temporaries and `.buckia/`).
    func files(_ folder: URL) -> [String: Data] {
        var found: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) else { return found }
        for case let url as URL in walker {
            let relative = String(url.standardizedFileURL.path.dropFirst(folder.standardizedFileURL.path.count + 1))
            if relative == ".buckia" { walker.skipDescendants(); continue }
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true,
                !Temporaries.isTemporaryName(Array(url.lastPathComponent.utf8))
            else { continue }
            found[relative] = try? Data(contentsOf: url)
        }
        return found
    }

    func snapshot() -> [String: Set<Data>] {
        var versions: [String: Set<Data>] = [:]
        for side in [local, remote] {
            for (path, data) in files(side) { versions[path, default: []].insert(data) }
        }
        return versions
    }

    /// How many of the files the model expects the destinations already hold.
    func arrived() -> Int {
        destinations.reduce(0) { total, side in
            let held = files(side)
            return total + model.filter { held[$0.key] == $0.value }.count
        }
    }

    /// Files on either side that are neither a version from before the trial nor the target.
    func partialFiles(allowed before: [String: Set<Data>]) -> [String] {
        var problems: [String] = []
        for side in [local, remote] {
            for (path, data) in files(side) where data != model[path] && !(before[path]?.contains(data) ?? false) {
                problems.append("\(side == local ? "local" : "remote") \(path) is partial (\(data.count) bytes)")
            }
        }
        return problems
    }

    func differences() -> [String] {
        var problems: [String] = []
        for side in [local, remote] {
            let held = files(side)
            let name = side == local ? "local" : "remote"
            for (path, data) in model where held[path] != data {
                problems.append("\(name) \(path) is \(held[path] == nil ? "missing" : "wrong")")
            }
            for path in held.keys where model[path] == nil { problems.append("\(name) \(path) should be gone") }
        }
        return problems
    }

    /// Why the pair's state store is not sound, or nil when it opens clean.
    func stateStoreProblem() -> String? {
        let folder = home.appendingPathComponent("state/buckia/sync")
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return "no state folder" }
        let stores = names.filter { $0.hasSuffix(".sqlite") }
        if names.contains(where: { $0.contains(".corrupt-") }) { return "a store was set aside as damaged: \(names)" }
        guard stores.count == 1 else { return "expected one store, found \(stores)" }
        do {
            let store = try SyncStateStore(url: folder.appendingPathComponent(stores[0]))
            return store.wasReset
        } catch {
            return "\(error)"
        }
    }

    func temporaries() -> [String] {
        var found: [String] = []
        for folder in [local, remote, home.appendingPathComponent("tmp")] {
            guard let walker = FileManager.default.enumerator(atPath: folder.path) else { continue }
            for case let path as String in walker where Temporaries.isTemporaryName(Array((path as NSString).lastPathComponent.utf8)) {
                found.append(path)
            }
        }
        return found
    }
}
