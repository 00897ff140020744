import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

@Suite("buckia chunk")
struct ChunkCommandTests {
    /// The JSON object on the last line of a `--json` run.
    static func statistics(_ output: String) throws -> [String: Any] {
        let line = try #require(output.split(separator: "\n").last)
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    static func randomFile(_ harness: borrowing CLIHarness, _ name: String, bytes: Int, seed: UInt64) throws -> URL {
        var random = RandomBytes(seed: seed)
        var buffer = [UInt8](repeating: 0, count: bytes)
        random.fill(&buffer)
        let url = harness.home.appendingPathComponent(name)
        try Data(buffer).write(to: url)
        return url
    }

    @Test("put writes only what changed, says so in JSON, and get restores; on a remote and on a local path", arguments: ["default:backups/file.manifest", "local/file.manifest"])
    func putAndGet(_ destination: String) throws {
        let harness = try CLIHarness()
        try FileManager.default.createDirectory(at: harness.home.appendingPathComponent("local"), withIntermediateDirectories: true)
        let file = try Self.randomFile(harness, "file.bin", bytes: 2_000_000, seed: 1)
        let first = try harness.run("chunk", "put", file.path, destination, "--json")
        #expect(first.status == 0, "\(first.stderr)")
        let stored = try Self.statistics(first.stdout)
        #expect(stored["bytes"] as? Int == 2_000_000 && stored["chunksReused"] as? Int == 0 && stored["newBytes"] as? Int == 2_000_000)
        var data = try Data(contentsOf: file)
        for offset in 1_000_000..<1_000_010 { data[offset] ^= 0xFF }
        try data.write(to: file)
        let second = try harness.run("chunk", "put", file.path, destination, "--json")
        let changed = try Self.statistics(second.stdout)
        let written = try #require(changed["chunksWritten"] as? Int)
        #expect(written >= 1 && written <= 2, "\(written) chunks written for a 10-byte change")
        #expect((changed["newBytes"] as? Int ?? .max) < 600_000 && (changed["reusedBytes"] as? Int ?? 0) > 1_400_000)
        let human = try harness.run("chunk", "put", file.path, destination)
        #expect(human.stdout.contains("chunks written 0") && human.stdout.contains("reused"))
        let restored = harness.home.appendingPathComponent("restored.bin")
        #expect(try harness.run("chunk", "get", destination, restored.path).status == 0)
        #expect(try Data(contentsOf: restored) == data)
        let stat = try harness.run("chunk", "stat", destination, "--json")
        #expect(stat.status == 0)
        let described = try Self.statistics(stat.stdout)
        #expect(described["missingChunks"] as? Int == 0)
    }

    @Test("a missing chunk: stat exits 3 and get exits 3 leaving the destination alone")
    func missingChunk() throws {
        let harness = try CLIHarness()
        let file = try Self.randomFile(harness, "file.bin", bytes: 500_000, seed: 2)
        #expect(try harness.run("chunk", "put", file.path, "file.manifest").status == 0)
        let store = harness.home.appendingPathComponent(".buckia-chunks")
        let chunkFiles = try FileManager.default.subpathsOfDirectory(atPath: store.path).filter { $0.count > 60 }
        try FileManager.default.removeItem(at: store.appendingPathComponent(try #require(chunkFiles.first)))
        #expect(try harness.run("chunk", "stat", "file.manifest").status == 3)
        let destination = try harness.write("keep me", to: "out.bin")
        #expect(try harness.run("chunk", "get", "file.manifest", destination.path).status == 3)
        #expect(try String(contentsOf: destination, encoding: .utf8) == "keep me")
    }

    @Test("a damaged chunk, a wrong key and a damaged manifest each fail with a message and write nothing")
    func badInput() throws {
        let harness = try CLIHarness()
        let file = try Self.randomFile(harness, "file.bin", bytes: 300_000, seed: 3)
        let key = ["CHUNK_KEY": String(repeating: "3c", count: 32)]
        #expect(try harness.run("chunk", "put", file.path, "sealed.manifest", "--key-env", "CHUNK_KEY", "--compress", extraEnvironment: key).status == 0)
        let wrong = try harness.run("chunk", "get", "sealed.manifest", "out.bin", "--key-env", "CHUNK_KEY", extraEnvironment: ["CHUNK_KEY": String(repeating: "4d", count: 32)])
        #expect(wrong.status == 4 && wrong.stderr.contains("different key"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("4d4d4d"))
        #expect(!FileManager.default.fileExists(atPath: harness.home.appendingPathComponent("out.bin").path))
        #expect(try harness.run("chunk", "get", "sealed.manifest", "out.bin", "--key-env", "CHUNK_KEY", extraEnvironment: key).status == 0)

        #expect(try harness.run("chunk", "put", file.path, "plain.manifest", "--store", "plain-store").status == 0)
        let store = harness.home.appendingPathComponent("plain-store")
        let chunk = store.appendingPathComponent(try #require(FileManager.default.subpathsOfDirectory(atPath: store.path).first { $0.count > 60 }))
        var bytes = try Data(contentsOf: chunk)
        bytes[bytes.count / 2] ^= 1
        try bytes.write(to: chunk)
        let damaged = try harness.run("chunk", "get", "plain.manifest", "damaged.bin", "--store", "plain-store")
        #expect(damaged.status == 1 && damaged.stderr.contains("damaged"), "\(damaged.stderr)")
        #expect(!FileManager.default.fileExists(atPath: harness.home.appendingPathComponent("damaged.bin").path))

        _ = try harness.write("{\"format\":\"buckia-chunk-manifest\",\"version\":1", to: "broken.manifest")
        let broken = try harness.run("chunk", "get", "broken.manifest", "broken.bin")
        #expect(broken.status == 1 && broken.stderr.contains("manifest"), "\(broken.stderr)")
        #expect(try harness.run("chunk", "frobnicate", "x").status == 2)
    }
}

extension ChunkCommandTests {
    @Test("a store keeps one way of writing chunks: other transforms or another key are refused before anything is written")
    func oneStackPerStore() throws {
        let harness = try CLIHarness()
        let file = try Self.randomFile(harness, "file.bin", bytes: 200_000, seed: 4)
        #expect(try harness.run("chunk", "put", file.path, "plain.manifest").status == 0)
        let compressed = try harness.run("chunk", "put", file.path, "other.manifest", "--compress")
        #expect(compressed.status == 5 && compressed.stderr.contains("store's options"), "\(compressed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: harness.home.appendingPathComponent("other.manifest").path))
        let keys = ["A": String(repeating: "a1", count: 32), "B": String(repeating: "b2", count: 32)]
        #expect(try harness.run("chunk", "put", file.path, "sealed.manifest", "--store", "sealed", "--key-env", "A", extraEnvironment: keys).status == 0)
        let other = try harness.run("chunk", "put", file.path, "sealed2.manifest", "--store", "sealed", "--key-env", "B", extraEnvironment: keys)
        #expect(other.status == 4 && other.stderr.contains("different key"), "\(other.stderr)")
        #expect(try harness.run("chunk", "get", "sealed.manifest", "back.bin", "--store", "sealed", "--key-env", "A", extraEnvironment: keys).status == 0)
        #expect(try Data(contentsOf: harness.home.appendingPathComponent("back.bin")) == Data(contentsOf: file))
    }
}

@Suite("buckia chunk with a large file")
struct ChunkLargeFileTests {
    /// Runs buckia to its end (at most 5 minutes), measured by the kernel.
    static func measured(_ harness: borrowing CLIHarness, _ arguments: [String]) throws -> (ending: MeasuredProcess.Ending, output: String) {
        let log = harness.home.appendingPathComponent("run-\(UUID().uuidString).log")
        let child = try MeasuredProcess(CLIHarness.executable, arguments, environment: harness.environment, output: log)
        let ending = try child.wait(upTo: .seconds(300))
        return (ending, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    @Test("128 MiB stored in under 64 MiB of memory; 1 MiB changed in the middle writes under 2 MiB; restored exactly")
    func boundedAndIncremental() throws {
        let harness = try CLIHarness()
        let file = harness.home.appendingPathComponent("big.bin")
        var random = RandomBytes(seed: 11)
        try random.writeFile(file, mebibytes: 128)
        let first = try Self.measured(harness, ["chunk", "put", file.path, "default:big.manifest", "--json"])
        #expect(first.ending.status == 0, "\(first.output)")
        #expect(first.ending.peakResidentBytes < 64 << 20, "peak RSS \(first.ending.peakResidentBytes >> 20) MiB")
        let handle = try FileHandle(forWritingTo: file)
        try handle.seek(toOffset: 64 << 20)
        var generator = SplitMix64(seed: 99)
        try handle.write(contentsOf: Data((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        try handle.close()
        let second = try Self.measured(harness, ["chunk", "put", file.path, "default:big.manifest", "--json"])
        #expect(second.ending.status == 0, "\(second.output)")
        let statistics = try ChunkCommandTests.statistics(second.output)
        let newBytes = try #require(statistics["newBytes"] as? Int)
        #expect(newBytes >= 1 << 20 && newBytes < 2 << 20, "\(newBytes) new bytes after changing 1 MiB")
        print("buckia chunk put, 128 MiB: peak RSS \(first.ending.peakResidentBytes >> 20) MiB; after a 1 MiB change \(newBytes) new bytes")
        let restored = harness.home.appendingPathComponent("restored.bin")
        let get = try Self.measured(harness, ["chunk", "get", "default:big.manifest", restored.path])
        #expect(get.ending.status == 0, "\(get.output)")
        #expect(get.ending.peakResidentBytes < 64 << 20, "peak RSS of get \(get.ending.peakResidentBytes >> 20) MiB")
        #expect(try Hashing.digests(ofFile: restored, [.sha256]) == Hashing.digests(ofFile: file, [.sha256]))
    }
}
