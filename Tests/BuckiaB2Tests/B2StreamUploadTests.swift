import BuckiaB2
import BuckiaCore
import BuckiaSync
import BuckiaTestSupport
import Foundation
import Testing

/// Hands out the source's bytes with one flipped, under the source's own description, so the
/// stream's end-of-read checks (size, checksums) are all that stand between the damage and
/// the destination.
private struct DamagingSource: ForwardingStorageProvider {
    let base: any StorageProvider

    func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
        let honest = try await base.openRead(remotePath: remotePath, options: options)
        let flipped = Locked(false)
        let bytes = ByteStream {
            guard var chunk = try await honest.bytes.next() else { return nil }
            if flipped.withLock({ done in defer { done = true }; return !done }), let first = chunk.first {
                chunk[chunk.startIndex] = first ^ 0xFF
            }
            return chunk
        }
        return try ObjectReadStream(file: honest.file, bytes: bytes, key: remotePath)
    }
}

@Suite("Streamed uploads on B2 (emulator)")
struct B2StreamUploadTests {
    static func providers() async throws -> (source: B2Provider, destination: B2Provider, B2Emulator) {
        let emulator = try await B2Emulator.start(buckets: ["buckia-source", "buckia-target"], minimumPartSize: 65_536)
        func provider(_ bucket: String) throws -> B2Provider {
            B2Provider(settings: try B2Settings.resolve(emulator.configuration(bucket: bucket, options: SharedB2.smallParts), environment: [:]))
        }
        return (try provider("buckia-source"), try provider("buckia-target"), emulator)
    }

    static func sync(_ source: any StorageProvider, to destination: any StorageProvider) async throws -> SyncResult {
        let engine = SyncEngine(
            local: try SyncEndpoint(provider: source, backend: "b2:buckia-source"),
            remote: try SyncEndpoint(provider: destination, backend: "b2:buckia-target"),
            options: SyncOptions(mode: .push), stateStore: nil)
        return try await engine.run()
    }

    /// The destination's streamed uploads share one part's worth of memory (64 KiB, B2's
    /// smallest part here), so four transfers at once must take turns with their parts: the
    /// sync still finishes, and hands the whole budget back.
    @Test("A sync from one remote to another streams every file across (the larger ones in parts, within a budget of one part), byte for byte, with its time")
    func remoteToRemote() async throws {
        let (source, _, emulator) = try await Self.providers()
        defer { emulator.stop() }
        let resources = SharedResources()
        let memory = UploadMemory(limit: 65_536)
        try resources.provide(SharedUploadMemory.self, memory)
        let destination = B2Provider(
            settings: try B2Settings.resolve(emulator.configuration(bucket: "buckia-target", options: SharedB2.smallParts), environment: [:]),
            resources: resources)
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let files: [String: Data] = [
            "empty": Data(), "small.txt": Data("small".utf8),
            "large.bin": Data((0..<(5 * 1_048_576 + 7)).map { UInt8(truncatingIfNeeded: $0 &* 13) }),
            "larger.bin": Data((0..<(9 * 1_048_576)).map { UInt8(truncatingIfNeeded: $0 &* 11) }),
            "third.bin": Data((0..<(2 * 1_048_576 + 1)).map { UInt8(truncatingIfNeeded: $0 &* 5) }),
        ]
        for (name, data) in files {
            _ = try await source.uploadData(data, remotePath: try ObjectKey(name), options: UploadOptions(modificationDate: date))
        }
        let result = try await Self.sync(source, to: destination)
        #expect(result.isComplete && result.uploaded == files.count, "\(result)")
        for (name, data) in files {
            #expect(try await destination.readData(remotePath: name) == data, "\(name)")
            #expect(try await destination.stat(remotePath: name)?.modificationDate == date, "\(name)")
        }
        // Streamed, a file beyond one part went up as a large file, whose SHA-1 is not known
        // when it starts: B2 stores none (through a temporary file it would have).
        for name in ["large.bin", "larger.bin", "third.bin"] {
            #expect(try await destination.stat(remotePath: name)?.checksums[.sha1] == nil, "\(name)")
        }
        #expect(try await destination.unfinishedUploads(prefix: "").isEmpty)
        #expect(memory.available == memory.limit && memory.waiting == 0)
        await resources.shutdown()
    }

    /// A stream that ends within a MiB is sent without reserving upload memory: otherwise
    /// each small file of a sync would wait for a whole part's worth (B2's default is 96 MiB)
    /// behind the large ones. A longer stream waits for its part's reservation.
    /// The time limit turns a wait that never ends (a small stream waiting for memory that
    /// is held) into a failure; it is generous because a loaded run once took over a minute.
    @Test(
        "A stream within a MiB is stored while all upload memory is held elsewhere; a longer one waits for it",
        .timeLimit(.minutes(15)))
    func smallStreamsNeedNoMemory() async throws {
        let (_, _, emulator) = try await Self.providers()
        defer { emulator.stop() }
        let resources = SharedResources()
        let memory = UploadMemory(limit: 1 << 20)
        try resources.provide(SharedUploadMemory.self, memory)
        let destination = B2Provider(
            settings: try B2Settings.resolve(emulator.configuration(bucket: "buckia-target", options: SharedB2.smallParts), environment: [:]),
            resources: resources)
        let held = try await memory.reserve(memory.limit)
        let small = Data((0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 3) })
        let stored = try await destination.upload(
            from: ByteStream.of(small, chunkSize: 7_000), remotePath: try ObjectKey("small.bin"), options: UploadOptions())
        #expect(stored.size == Int64(small.count))
        let large = Data((0..<((1 << 20) + 300_000)).map { UInt8(truncatingIfNeeded: $0 &* 5) })
        let upload = Task {
            try await destination.upload(from: ByteStream.of(large, chunkSize: 100_000), remotePath: try ObjectKey("large.bin"), options: UploadOptions())
        }
        // Polled every 5 ms, 30 s at most: a loop of yields here starved the task pool of a
        // loaded test run (a million yields outlasted the time limit).
        var polls = 0
        while memory.waiting == 0, polls < 6_000 {
            polls += 1
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(memory.waiting == 1, "the longer stream did not wait for upload memory")
        memory.release(held)
        #expect(try await upload.value.size == Int64(large.count))
        #expect(try await destination.readData(remotePath: "large.bin") == large)
        #expect(memory.available == memory.limit)
        await resources.shutdown()
    }

    @Test("A damaged byte from the source fails the file, and the destination keeps nothing of it, not even an unfinished large file", arguments: [
        3 * 1_048_576, 1_000,
    ])
    func damagedSourceIsNotCommitted(size: Int) async throws {
        let (source, destination, emulator) = try await Self.providers()
        defer { emulator.stop() }
        let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        _ = try await source.uploadData(data, remotePath: "damaged.bin")
        let result = try await Self.sync(DamagingSource(base: source), to: destination)
        #expect(result.uploaded == 0 && result.failures.count == 1, "\(result)")
        #expect(result.failures.first?.error.code == .checksumMismatch, "\(result.failures)")
        #expect(try await destination.stat(remotePath: "damaged.bin") == nil)
        #expect(try await destination.unfinishedUploads(prefix: "").isEmpty)
    }
}
