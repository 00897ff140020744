import BuckiaB2
import BuckiaCore
import BuckiaHTTP
import BuckiaTestSupport
import Foundation
import Testing

/// The B2 provider under injected faults: 500s, 503s and 429s with Retry-After, expired
/// authorizations, connections dropped before a call does anything, after it did its work
/// (the answer lost) or mid-body, truncated bodies, and bytes corrupted on the way in either
/// direction. Every byte is checked against the source.
@Suite("B2 under injected faults")
struct B2FaultTests {
    static let kinds = ["500", "503", "429", "expired_auth", "drop", "drop_after", "truncate", "corrupt"]

    /// The seed of the fault generator: `BUCKIA_FAULT_SEED` replays a run.
    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["BUCKIA_FAULT_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
    }

    @Test("With faults on 20% of requests, 200 uploads and 200 downloads finish with every byte verified")
    func twoHundredUnderFaults() async throws {
        let seed = Self.seed
        let emulator = try await B2Emulator.start(buckets: ["buckia-faults"], minimumPartSize: 65_536, retryAfter: 0)
        defer { emulator.stop() }
        // Sixteen attempts. An attempt fails when a fault hits it (20 %) and also when another
        // of the 8 requests in flight draws an expired authorization (2.5 % each), which ends
        // the token this one carries: 1 − 0.8 × 0.975^7 ≈ 0.33 per attempt. Eight attempts
        // (0.33^8 ≈ 1.4e-4 per request, over some 1,200 requests) failed about one run in six;
        // sixteen (0.33^16 ≈ 2e-8) leave a run's odds of failing near two in a hundred thousand.
        let policy = RetryPolicy(maxAttempts: 16, baseDelay: .milliseconds(5), maxDelay: .milliseconds(100))
        var configuration = emulator.configuration(bucket: "buckia-faults", options: SharedB2.smallParts)
        configuration.maxConcurrentOperations = 8
        let provider = B2Provider(settings: try B2Settings.resolve(configuration, environment: [:]), retryPolicy: policy)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-b2-faults-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var random = SplitMix64(seed: seed)
        var files: [(name: String, data: Data)] = []
        for index in 0..<200 {
            // Every 20th file is a large file of three parts; the rest are up to 64 KiB.
            let size = index % 20 == 0 ? 2 * 1_048_576 + Int(random.next() % 100_000) : Int(random.next() % 65_536)
            let data = Data((0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            let name = "file-\(index).bin"
            try data.write(to: folder.appendingPathComponent(name))
            files.append((name, data))
        }

        try await emulator.setFaults(rate: 0.2, kinds: Self.kinds, seed: seed)
        let list = files
        let down = folder.appendingPathComponent("down")
        try FileManager.default.createDirectory(at: down, withIntermediateDirectories: true)
        do {
            try await forEachConcurrently(Array(list.indices), width: 8) { index in
                try await provider.uploadFile(localURL: folder.appendingPathComponent(list[index].name), remotePath: "faults/\(list[index].name)")
            }
            try await forEachConcurrently(Array(list.indices), width: 8) { index in
                _ = try await provider.downloadFile(remotePath: "faults/\(list[index].name)", localURL: down.appendingPathComponent(list[index].name))
            }
        } catch {
            // The seed replays the run (BUCKIA_FAULT_SEED), the statistics say how it went.
            let stats = try await emulator.stats()
            Issue.record("\(error) (seed \(seed); \(await provider.statistics()); faults \(stats.faults.sorted { $0.key < $1.key }))")
            return
        }
        let stats = try await emulator.stats()
        try await emulator.setFaults(rate: 0, kinds: [])

        for file in files {
            #expect(try Data(contentsOf: down.appendingPathComponent(file.name)) == file.data, "\(file.name) came back different (seed \(seed))")
        }
        // What B2 stored is what was sent: every SHA-1 it lists is the source's.
        let listed = Dictionary(uniqueKeysWithValues: try await provider.listFiles(path: "faults/").map { ($0.path.rawValue, $0) })
        #expect(listed.count == 200)
        for file in files {
            #expect(listed["faults/\(file.name)"]?.checksums[.sha1] == (try Hashing.digest(file.data, .sha1).hex), "\(file.name) (seed \(seed))")
        }
        let mine = await provider.statistics()
        let injected = stats.faults.values.reduce(0, +)
        print("B2 faults (seed \(seed)): \(injected) injected in \(stats.total) requests \(stats.faults.sorted { $0.key < $1.key }); "
            + "\(mine); \(stats.sha1_rejections) uploads refused for a wrong SHA-1; \(stats.shared_upload_urls) shared upload URLs")
        #expect(injected > 100, "faults were injected: \(stats.faults)")
        #expect(stats.sha1_rejections > 0, "corrupted uploads were refused by their SHA-1")
        #expect(mine.authorizations > 1, "expired authorizations were renewed")
        #expect(mine.uploadURLRenewals > 0, "failed upload URLs were replaced")
        #expect(stats.shared_upload_urls == 0)
    }

    @Test("A download whose bytes are always corrupted fails with checksumMismatch and leaves the destination as it was")
    func corruptedDownloadNeverAccepted() async throws {
        let emulator = try await B2Emulator.start(buckets: ["buckia-faults"], minimumPartSize: 65_536, retryAfter: 0)
        defer { emulator.stop() }
        let provider = B2Provider(
            settings: try B2Settings.resolve(emulator.configuration(bucket: "buckia-faults"), environment: [:]),
            retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5)))
        try await provider.uploadData(Data(repeating: 0x61, count: 10_000), remotePath: "c.bin")
        try await emulator.setFaults(rate: 1, kinds: ["corrupt"], calls: ["b2_download_file_by_name"])
        let destination = TemporaryFile.makeURL()
        defer { try? FileManager.default.removeItem(at: destination) }
        try Data("previous".utf8).write(to: destination)
        let error = await #expect(throws: BuckiaError.self) { try await provider.downloadFile(remotePath: "c.bin", localURL: destination) }
        #expect(error?.code == .checksumMismatch)
        #expect(try Data(contentsOf: destination) == Data("previous".utf8))
        let read = await #expect(throws: BuckiaError.self) { try await provider.readData(remotePath: "c.bin") }
        #expect(read?.code == .checksumMismatch)
        #expect(try await emulator.stats().count("b2_download_file_by_name") == 6, "three attempts each")
    }

    @Test("An upload whose bytes are always corrupted on the way is refused by B2 and never stored")
    func corruptedUploadNeverStored() async throws {
        let emulator = try await B2Emulator.start(buckets: ["buckia-faults"], minimumPartSize: 65_536, retryAfter: 0)
        defer { emulator.stop() }
        let provider = B2Provider(
            settings: try B2Settings.resolve(emulator.configuration(bucket: "buckia-faults"), environment: [:]),
            retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5)))
        try await emulator.setFaults(rate: 1, kinds: ["corrupt"], calls: ["b2_upload_file"])
        let error = await #expect(throws: BuckiaError.self) { try await provider.uploadData(Data(repeating: 0x62, count: 10_000), remotePath: "u.bin") }
        #expect(error?.code == .checksumMismatch)
        let stats = try await emulator.stats()
        #expect(stats.sha1_rejections == 3 && stats.versions == 0)
        #expect(stats.count("b2_get_upload_url") == 3, "each attempt on a new upload URL")
    }

    @Test("A large file whose finish was done but whose answer was lost is stored, not failed")
    func finishAnswerLost() async throws {
        let emulator = try await B2Emulator.start(buckets: ["buckia-faults"], minimumPartSize: 65_536, retryAfter: 0)
        defer { emulator.stop() }
        var configuration = emulator.configuration(bucket: "buckia-faults", options: SharedB2.smallParts)
        configuration.maxConcurrentOperations = 2
        let provider = B2Provider(
            settings: try B2Settings.resolve(configuration, environment: [:]),
            retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5)))
        let data = Data((0..<(3 * 1_048_576)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        try await emulator.setFaults(rate: 1, kinds: ["drop_after"], calls: ["b2_finish_large_file"])
        let stored = try await provider.uploadData(data, remotePath: "lost-answer.bin")
        #expect(stored.checksums[.sha1] == (try Hashing.digest(data, .sha1).hex))
        #expect(try await emulator.stats().count("b2_finish_large_file") == 2, "the finish was done once, its answer lost, and retried")
        try await emulator.setFaults(rate: 0, kinds: [])
        #expect(try await provider.readData(remotePath: "lost-answer.bin") == data)
        #expect(try await provider.unfinishedUploads(prefix: "").isEmpty)
    }

    @Test("A 429 or 503 with Retry-After is waited out and retried", arguments: ["429", "503"])
    func retryAfter(_ kind: String) async throws {
        let emulator = try await B2Emulator.start(buckets: ["buckia-faults"], retryAfter: 7)
        defer { emulator.stop() }
        let waits = Locked<[Duration]>([])
        var policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5))
        policy.sleep = { delay in waits.withLock { $0.append(delay) } }
        let provider = B2Provider(settings: try B2Settings.resolve(emulator.configuration(bucket: "buckia-faults"), environment: [:]), retryPolicy: policy)
        try await emulator.setFaults(rate: 1, kinds: [kind], calls: ["b2_list_file_names"])
        let error = await #expect(throws: BuckiaError.self) { _ = try await provider.listFiles() }
        #expect(error?.code == (kind == "429" ? .rateLimited : .transient))
        #expect(waits.withLock { $0 } == [.seconds(7), .seconds(7)], "each retry waited the 7 s B2 asked for")
    }
}
