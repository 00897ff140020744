import Buckia
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `buckia chunk put` killed with SIGKILL at 20 random moments, into a store on a local remote
/// (chunks as objects through the provider) and into a chunk folder on disk. Each trial
/// changes a random stretch of the file first, so every put has new chunks to write and
/// chunks to reuse. After each kill: the manifest is absent or restores the file exactly, and
/// every chunk in the store holds the bytes its name says. After each rerun: the manifest
/// restores the file, `chunk stat` finds no chunk missing, and no temporary is left.
@Suite("Chunk kill harness: SIGKILL at random moments of chunk put")
struct ChunkKillHarnessTests {
    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case remote = "chunk put to a local remote's store"
        case folder = "chunk put to a chunk folder"
        var testDescription: String { rawValue }
    }

    @Test("Killed at 20 random moments: no manifest without its chunks, no damaged chunk, a rerun that restores", arguments: Store.allCases)
    func killAndRerun(_ store: Store) async throws {
        let seed = ProcessInfo.processInfo.environment["BUCKIA_KILL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        var random = SplitMix64(seed: seed ^ UInt64(store.rawValue.utf8.count))
        let world = try KillWorld()
        var tally = KillHarnessTests.Tally()
        try world.chunkPuts(remote: store == .remote, random: &random, tally: &tally)
        print("kill harness: \(store.rawValue): \(tally) (seed \(seed))")
        KillReport(
            component: store.rawValue, kills: tally.kills, midRun: tally.midRun, violations: tally.violations.count, seed: seed,
            checks: "no manifest without its chunks, every chunk the bytes its name says; the rerun restores the file, none missing, no temporary"
        ).write()
        #expect(tally.kills == KillHarnessTests.kills)
        #expect(tally.midRun >= KillHarnessTests.kills / 2, "only \(tally.midRun) of \(tally.kills) kills landed mid-run")
        #expect(tally.violations.isEmpty, "seed \(seed): \(tally.violations.prefix(10).joined(separator: "; "))")
    }
}

extension KillWorld {
    /// A 12 MiB file in 16 KiB chunks (about 750), put again after each change of a random
    /// 2 MiB stretch, killed once it has written a random share of the new bytes.
    func chunkPuts(remote: Bool, random: inout SplitMix64, tally: inout KillHarnessTests.Tally) throws {
        let size = 12 << 20
        let source = home.appendingPathComponent("src/big.bin")
        try randomFile(source, size: size)
        let local = home.appendingPathComponent("chunks")
        try FileManager.default.createDirectory(at: local, withIntermediateDirectories: true)
        let destination = remote ? "k:big.manifest" : local.appendingPathComponent("big.manifest").path
        let manifest = remote ? root.appendingPathComponent("big.manifest") : local.appendingPathComponent("big.manifest")
        let store = remote ? root.appendingPathComponent(".buckia-chunks") : local.appendingPathComponent(".buckia-chunks")
        let temporaryAreas = remote ? [root.appendingPathComponent(".buckia"), store] : [store, local]
        let put = ["chunk", "put", source.path, destination, "--average-size", "16384"]
        let restored = home.appendingPathComponent("restored.bin")
        func restores() throws -> Bool {
            try? FileManager.default.removeItem(at: restored)
            return try run(["chunk", "get", destination, restored.path]).status == 0 && same(restored, source)
        }
        for trial in 0..<KillHarnessTests.kills {
            // A fresh 2 MiB stretch somewhere in the file: about 130 new chunks to write.
            let stretch = 2 << 20
            let offset = Int.random(in: 0...(size - stretch), using: &random)
            let handle = try FileHandle(forUpdating: source)
            try handle.seek(toOffset: UInt64(offset))
            var fresh = [UInt8](repeating: 0, count: stretch)
            var bytes = RandomBytes(seed: random.next())
            bytes.fill(&fresh)
            try handle.write(contentsOf: Data(fresh))
            try handle.close()
            try? FileManager.default.removeItem(at: manifest)
            // Mostly while the new chunks are written (the process's own count of bytes written,
            // /proc/PID/io, which costs one read to look at however large the store is); one
            // trial in ten after the put has ended.
            // (In the first three quarters of the new bytes: under a loaded test run, kills aimed
            // at the last ones landed after the put had ended in 8 trials of 20.)
            let threshold = Int.random(in: 0..<10, using: &random) == 0 ? Int.max : Int.random(in: 0..<(stretch * 3 / 4), using: &random)
            let process = try start(put)
            let deadline = ContinuousClock.now + .seconds(120)
            while process.isRunning, ContinuousClock.now < deadline, (process.bytesWritten ?? Int.max) < threshold { usleep(500) }
            process.stop()
            tally.kills += 1
            if process.termination == .signalled(SIGKILL) { tally.midRun += 1 }
            tally.leftByKill += temporaryAreas.map { temporaries(under: $0).count }.reduce(0, +)
            if FileManager.default.fileExists(atPath: manifest.path), try !restores() {
                tally.violations.append("trial \(trial): a manifest after the kill that does not restore the file")
            }
            tally.violations += damagedChunks(under: store).map { "trial \(trial): after the kill, \($0)" }
            let rerun = try run(put)
            if rerun.status != 0 { tally.violations.append("trial \(trial): the rerun exited \(rerun.status)") }
            if try !restores() { tally.violations.append("trial \(trial): the rerun's manifest does not restore the file") }
            if try run(["chunk", "stat", destination]).status != 0 { tally.violations.append("trial \(trial): chunk stat after the rerun finds chunks missing") }
            tally.violations += damagedChunks(under: store).map { "trial \(trial): after the rerun, \($0)" }
            for area in temporaryAreas {
                let left = temporaries(under: area)
                if left.count > 0 { tally.violations.append("trial \(trial): temporaries after the rerun: \(left.names.joined(separator: ", "))") }
            }
        }
    }

    /// The store's chunk files, each with the identifier its path spells (fan-out folders and
    /// name, 64 hex digits in all); other files (settings) are left out.
    func chunkFiles(under store: URL) -> [(url: URL, id: String)] {
        files(under: store).compactMap { file in
            guard !isTemporary(file.url.lastPathComponent) else { return nil }
            let relative = file.url.path.dropFirst(store.path.count)
            let name = file.url.lastPathComponent
            let spelled = relative.filter { $0 != "/" }
            for candidate in [name, String(spelled)] where candidate.count == 64 && candidate.allSatisfy(\.isHexDigit) {
                return (file.url, candidate.lowercased())
            }
            return nil
        }
    }

    /// Chunks whose bytes do not hash to their name (the chunks are stored plain here).
    func damagedChunks(under store: URL) -> [String] {
        chunkFiles(under: store).compactMap { chunk in
            guard let bytes = try? Data(contentsOf: chunk.url) else { return "\(chunk.id) cannot be read" }
            return Hashing.sha256Hex(bytes) == chunk.id ? nil : "chunk \(chunk.id) holds \(bytes.count) bytes of something else"
        }
    }
}
