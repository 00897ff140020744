import Buckia
import BuckiaSQLite
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `buckia catalog` killed with SIGKILL at random moments of batch imports (with records that
/// take another record's key, whose media must then go), multi-record removals and
/// truncations, each kill followed by a rerun.
///
/// After each kill: the database passes SQLite's integrity check; it holds exactly the
/// records of every batch (or removal) the command acknowledged, plus at most the one in
/// flight, whole or not at all; every record it holds still has its media file; nothing
/// outside the media folder, and no link in it, was touched. After each rerun: the catalog is
/// exactly the model, and the media folder holds exactly the model's files (none orphaned,
/// because the outbox ran).
@Suite("Catalog kill harness: SIGKILL during batch imports, removals and truncations")
struct CatalogKillHarnessTests {
    static let trials = 24

    @Test("Killed at 24 random moments, each rerun leaves an intact catalog with every acknowledged write and media removed only with its record", .timeLimit(.minutes(10)))
    func killAndRerun() async throws {
        let seed = ProcessInfo.processInfo.environment["BUCKIA_KILL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        let report = try await offPool { try CatalogKillWorld.run(trials: Self.trials, seed: seed) }
        print("catalog kill harness: \(report.kills) kills (\(report.midRun) mid-run: \(report.midRunByKind)), \(report.violations.count) violations (seed \(seed))")
        KillReport(
            component: "catalog writes", kills: report.kills, midRun: report.midRun, violations: report.violations.count, seed: seed,
            checks: "the catalog intact with every acknowledged write, media removed only with its record; the rerun completes"
        ).write()
        #expect(report.kills == Self.trials)
        #expect(report.midRun >= Self.trials / 2, "only \(report.midRun) of \(report.kills) kills landed mid-run")
        for kind in ["import", "rm"] {
            #expect((report.midRunByKind[kind] ?? 0) > 0, "no kill landed in the middle of a \(kind)")
        }
        #expect(report.violations.isEmpty, "seed \(seed): \(report.violations.prefix(10).joined(separator: "; "))")
    }
}

/// A catalog with a media folder, the `buckia` commands that change it, and the model of what
/// it must hold.
private final class CatalogKillWorld {
    struct Report: Sendable {
        var kills = 0
        var midRun = 0
        var midRunByKind: [String: Int] = [:]
        var violations: [String] = []
    }

    let home: URL
    let database: URL
    let media: URL
    let outside: URL
    let environment: [String: String]
    /// fileId → record, as the catalog must hold once every command ran to its end.
    var model: [String: FileRecord] = [:]
    private var counter = 0
    private var outputs = 0

    static func run(trials: Int, seed: UInt64) throws -> Report {
        var random = SplitMix64(seed: seed)
        let world = try CatalogKillWorld()
        defer { world.removeHome() }
        var report = Report()
        try world.seed(random: &random)
        let plan = ["import", "rm", "import", "rm", "import", "truncate"]
        for trial in 0..<trials {
            var kind = plan[trial % plan.count]
            if kind == "rm" && world.model.count < 200 { kind = "import" }
            let (midRun, problems) = try world.trial(kind, random: &random)
            report.kills += 1
            if midRun {
                report.midRun += 1
                report.midRunByKind[kind, default: 0] += 1
            }
            report.violations += problems.map { "trial \(trial) (\(kind)): \($0)" }
        }
        return report
    }

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-catalog-kill-\(UUID().uuidString)")
        database = home.appendingPathComponent("catalog.sqlite")
        media = home.appendingPathComponent("media")
        outside = home.appendingPathComponent("outside")
        for folder in [media, outside, home.appendingPathComponent("tmp")] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        environment = BackgroundHome.environment(home: home)
        // What no removal may touch: a file outside the folder, a link in it pointing there
        // (named as a media file of the sweep's extensions), and a file of another extension.
        try Data("keep".utf8).write(to: outside.appendingPathComponent("keep.mp4"))
        try FileManager.default.createSymbolicLink(atPath: media.appendingPathComponent("link.mp4").path, withDestinationPath: "../outside/keep.mp4")
        try Data("notes".utf8).write(to: media.appendingPathComponent("notes.txt"))
    }

    func removeHome() {
        do {
            try FileManager.default.removeItem(at: home)
        } catch {
            print("catalog kill harness: \(home.path) was left behind: \(error)")
        }
    }

    // MARK: Trials

    /// Runs one command, kills it at a random moment, checks, reruns it to the end, checks.
    /// Returns whether the kill landed mid-run, and what was wrong.
    func trial(_ kind: String, random: inout SplitMix64) throws -> (Bool, [String]) {
        switch kind {
        case "import": return try importTrial(random: &random)
        case "rm": return try removeTrial(random: &random)
        default: return try truncateTrial(random: &random)
        }
    }

    func seed(random: inout SplitMix64) throws {
        let records = (0..<3000).map { _ in newRecord(random: &random) }
        let input = try writeInput(records)
        let (status, _, errors) = try runToEnd(["catalog", "import", input.path, "--db", database.path, "--media", media.path, "--batch", "500"])
        guard status == 0 else { throw HarnessError(description: "the first import failed: \(errors)") }
        for record in records { model[record.fileId] = record }
        for record in records { try writeMedia(record) }
    }

    func importTrial(random: inout SplitMix64) throws -> (Bool, [String]) {
        let batch = Int.random(in: 200...600, using: &random)
        var records: [FileRecord] = []
        var touched = Set<String>()
        for old in model.values.shuffled(using: &random).prefix(Int.random(in: 100...1500, using: &random)) where touched.insert(old.fileId).inserted {
            var changed = old
            changed.title = "edited \(Int.random(in: 0...999_999, using: &random)) ünïcode"
            changed.publishDate = Self.date(random: &random)
            records.append(changed)
        }
        // Records that take the key of a record the batch does not otherwise name: that record
        // goes, and so does its media file.
        for old in model.values.shuffled(using: &random) where !touched.contains(old.fileId) {
            guard records.count < 1700 + batch, Int.random(in: 0..<25, using: &random) == 0 else { continue }
            touched.insert(old.fileId)
            var taker = newRecord(random: &random)
            taker.key = old.key
            records.append(taker)
        }
        for _ in 0..<Int.random(in: 200...1500, using: &random) { records.append(newRecord(random: &random)) }
        records.shuffle(using: &random)
        for record in records { try writeMedia(record) }
        let input = try writeInput(records)
        let batches = stride(from: 0, to: records.count, by: batch).map { Array(records[$0..<min($0 + batch, records.count)]) }
        let arguments = ["catalog", "import", input.path, "--db", database.path, "--media", media.path, "--batch", String(batch)]
        let threshold = Int.random(in: 0...batches.count, using: &random)
        // Half the kills come as soon as the threshold batch is acknowledged (most land while
        // the next batch is read and decoded); the other half once the next batch has begun
        // writing (the log changed since), inside its transaction or its commit.
        let duringWrite = Bool.random(using: &random)
        var stampAtThreshold: [Int]?
        let (midRun, output) = try kill(arguments) { lines in
            guard lines.filter({ $0.hasPrefix("Cached ") }).count >= threshold else { return false }
            guard duringWrite else { return true }
            let stamp = self.logStamp()
            guard let before = stampAtThreshold else {
                stampAtThreshold = stamp
                return false
            }
            return stamp != before
        }
        let acknowledged = output.filter { $0.hasPrefix("Cached ") }.count
        var problems: [String] = []
        var states = [model]
        for (index, records) in batches.enumerated() where index <= acknowledged {
            var next = states[states.count - 1]
            Self.apply(records, to: &next)
            states.append(next)
        }
        let found = try check(&problems, afterKill: true)
        // Acknowledged batches are all there; the one in flight is there whole or not at all.
        let matches = states.suffix(from: min(acknowledged, states.count - 1)).contains { $0 == found }
        if !matches {
            problems.append("after \(acknowledged) acknowledged batches the catalog holds \(found.count) records, a state no prefix of whole batches gives (\(Self.difference(found, states[min(acknowledged, states.count - 1)])))")
        }
        let (status, _, errors) = try runToEnd(arguments)
        if status != 0 { problems.append("the rerun exited \(status): \(errors)") }
        for records in batches { Self.apply(records, to: &model) }
        try checkConverged(&problems)
        return (midRun, problems)
    }

    func removeTrial(random: inout SplitMix64) throws -> (Bool, [String]) {
        let ids = model.keys.sorted().shuffled(using: &random).prefix(Int.random(in: 30...150, using: &random)).map { $0 }
        let arguments = ["catalog", "rm"] + ids + ["--db", database.path, "--media", media.path]
        let threshold = Int.random(in: 0...ids.count, using: &random)
        let (midRun, output) = try kill(arguments) { $0.filter { $0.hasPrefix("Removed ") }.count >= threshold }
        let acknowledged = output.filter { $0.hasPrefix("Removed ") }.count
        var problems: [String] = []
        let found = try check(&problems, afterKill: true)
        // Removals go in the order given: the acknowledged ones, and at most the next, are gone.
        let gone = ids.filter { found[$0] == nil }
        if gone != Array(ids.prefix(acknowledged)) && gone != Array(ids.prefix(acknowledged + 1)) {
            problems.append("after \(acknowledged) acknowledged removals \(gone.count) of the records named are gone")
        }
        for id in ids.prefix(acknowledged) where FileManager.default.fileExists(atPath: media.appendingPathComponent("\(id).mp4").path) {
            problems.append("\(id) was acknowledged as removed but its media file is still there")
        }
        let left = ids.filter { found[$0] != nil }
        let (status, _, errors) = try runToEnd(
            left.isEmpty ? ["catalog", "ls", "--db", database.path, "--media", media.path] : ["catalog", "rm"] + left + ["--db", database.path, "--media", media.path])
        if status != 0 { problems.append("the rerun exited \(status): \(errors)") }
        for id in ids { model[id] = nil }
        try checkConverged(&problems)
        return (midRun, problems)
    }

    func truncateTrial(random: inout SplitMix64) throws -> (Bool, [String]) {
        let arguments = ["catalog", "truncate", "--db", database.path, "--media", media.path]
        // No progress to count: the kill comes after a random number of millisecond polls.
        let polls = Int.random(in: 0...40, using: &random)
        var seen = 0
        let (midRun, _) = try kill(arguments) { _ in
            seen += 1
            return seen > polls
        }
        var problems: [String] = []
        let found = try check(&problems, afterKill: true)
        if !found.isEmpty && found != model { problems.append("a killed truncate left \(found.count) of \(model.count) records") }
        let (status, _, errors) = try runToEnd(arguments)
        if status != 0 { problems.append("the rerun exited \(status): \(errors)") }
        model = [:]
        try checkConverged(&problems)
        return (midRun, problems)
    }

    // MARK: Checks

    /// The catalog's records, read straight from the file (opening it through Buckia would
    /// run the outbox), after checking what must hold at any moment.
    func check(_ problems: inout [String], afterKill: Bool) throws -> [String: FileRecord] {
        let db = try SQLiteConnection(path: database.path, mode: .readWrite(create: false))
        let integrity = try db.query("PRAGMA integrity_check") { $0.string(0) ?? "" }
        if integrity != ["ok"] { problems.append("integrity check: \(integrity.prefix(3))") }
        let rows = try db.query("SELECT file_id, key, title, author_name, publish_date, size, url FROM catalog_files") { row in
            FileRecord(
                fileId: row.string(0) ?? "", key: row.string(1) ?? "", title: row.string(2), authorName: row.string(3),
                publishDate: row.isNull(4) ? nil : Date(timeIntervalSince1970: row.double(4)), size: row.isNull(5) ? nil : row.int64(5),
                url: row.string(6).flatMap { URL(string: $0) })
        }
        var found: [String: FileRecord] = [:]
        for row in rows { found[row.fileId] = row }
        // No media file goes before its record.
        let early = found.keys.filter { !FileManager.default.fileExists(atPath: media.appendingPathComponent("\($0).mp4").path) }
        if !early.isEmpty { problems.append("\(early.count) records whose media file is gone (\(early.sorted().prefix(3)))\(afterKill ? " after the kill" : "")") }
        checkUntouched(&problems)
        return found
    }

    /// After a rerun: the catalog is the model, and the media folder holds the model's files
    /// and the three bystanders, nothing else.
    func checkConverged(_ problems: inout [String]) throws {
        let found = try check(&problems, afterKill: false)
        if found != model { problems.append("after the rerun: \(Self.difference(found, model))") }
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: media.path))
        let expected = Set(model.keys.map { "\($0).mp4" }).union(["link.mp4", "notes.txt"])
        let orphans = names.subtracting(expected)
        if !orphans.isEmpty { problems.append("after the rerun \(orphans.count) media files belong to no record (\(orphans.sorted().prefix(3)))") }
    }

    func checkUntouched(_ problems: inout [String]) {
        do {
            if try Data(contentsOf: outside.appendingPathComponent("keep.mp4")) != Data("keep".utf8) { problems.append("the file outside the media folder was changed") }
            if try FileManager.default.destinationOfSymbolicLink(atPath: media.appendingPathComponent("link.mp4").path) != "../outside/keep.mp4" {
                problems.append("the link in the media folder was changed")
            }
        } catch {
            problems.append("a bystander is gone: \(error)")
        }
        if !FileManager.default.fileExists(atPath: media.appendingPathComponent("notes.txt").path) { problems.append("notes.txt (not a media extension) was removed") }
    }

    // MARK: Running

    /// Starts `arguments`, kills it with SIGKILL once `reached` holds for its output lines so
    /// far (or it ended), and returns whether it died of the kill and its whole output.
    func kill(_ arguments: [String], when reached: ([String]) -> Bool) throws -> (Bool, [String]) {
        outputs += 1
        let output = home.appendingPathComponent("out-\(outputs).txt")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        let running = try BuckiaProcess(arguments, home: home, environment: environment, stdout: handle)
        _ = running.poll(until: { reached(lines(output)) }, polls: 60_000)
        return (running.killed(), lines(output))
    }

    func runToEnd(_ arguments: [String]) throws -> (Int32, [String], String) {
        outputs += 1
        let output = home.appendingPathComponent("out-\(outputs).txt")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        let running = try BuckiaProcess(arguments, home: home, environment: environment, stdout: handle)
        let status = try running.wait()
        return (status, lines(output), running.errorText)
    }

    /// The write-ahead log's size and modification time: it changes when a transaction writes.
    func logStamp() -> [Int] {
        var info = stat()
        guard stat(database.path + "-wal", &info) == 0 else { return [] }
        return [Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec]
    }

    func lines(_ file: URL) -> [String] {
        guard let data = FileManager.default.contents(atPath: file.path) else { return [] }
        // Only whole lines: the last may still be being written.
        return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    // MARK: Records

    func newRecord(random: inout SplitMix64) -> FileRecord {
        counter += 1
        let id = "f\(counter)"
        return FileRecord(
            fileId: id, key: "media/\(counter).mp4", title: "Talk \(Int.random(in: 0...999_999, using: &random)) naïve café", authorName: "Speaker \(counter % 97)",
            publishDate: Self.date(random: &random), size: Int64.random(in: 0...(1 << 40), using: &random), url: URL(string: "https://cdn.example/media/\(id).mp4"))
    }

    static func date(random: inout SplitMix64) -> Date {
        Date(timeIntervalSince1970: Double(Int.random(in: 1_500_000_000...1_800_000_000, using: &random)))
    }

    func writeMedia(_ record: FileRecord) throws {
        let file = media.appendingPathComponent("\(record.fileId).mp4")
        if !FileManager.default.fileExists(atPath: file.path) { try Data(record.fileId.utf8).write(to: file) }
    }

    func writeInput(_ records: [FileRecord]) throws -> URL {
        outputs += 1
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        var text = Data()
        for record in records {
            text.append(try encoder.encode(record))
            text.append(0x0A)
        }
        let file = home.appendingPathComponent("input-\(outputs).jsonl")
        try text.write(to: file)
        return file
    }

    /// One batch as the catalog applies it: a record replaces the one with its fileId, and one
    /// holding its key under another fileId.
    static func apply(_ batch: [FileRecord], to model: inout [String: FileRecord]) {
        var holders = Dictionary(model.map { ($0.value.key, $0.key) }, uniquingKeysWith: { first, _ in first })
        for record in batch {
            if let holder = holders[record.key], holder != record.fileId { model[holder] = nil }
            if let old = model[record.fileId], old.key != record.key { holders[old.key] = nil }
            model[record.fileId] = record
            holders[record.key] = record.fileId
        }
    }

    static func difference(_ found: [String: FileRecord], _ expected: [String: FileRecord]) -> String {
        let missing = expected.keys.filter { found[$0] == nil }.count
        let extra = found.keys.filter { expected[$0] == nil }.count
        let different = found.filter { expected[$0.key] != nil && expected[$0.key] != $0.value }.count
        return "\(missing) missing, \(extra) unexpected, \(different) different"
    }
}
