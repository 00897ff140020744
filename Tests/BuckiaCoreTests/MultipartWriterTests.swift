import BuckiaCore
import BuckiaProviderKit
import Foundation
import Testing

/// The multipart driver S3's and B2's streamed uploads share, over a writer that records what
/// it is asked: the limits no real upload in a test can reach (10,000 parts), and the order of
/// the steps. The providers' own tests run it against moto, Ceph RGW and the B2 emulator.
@Suite("MultipartWriter")
struct MultipartWriterTests {
    /// Records every step; fails part `failing`, and the abort when `abortFails`.
    struct Recorder: MultipartWrite {
        let steps = Locked<[String]>([])
        var failing: Int?
        var abortFails = false
        var initiateFails = false
        /// Part 2 says it has started here, then waits until its task is cancelled.
        var stalls: AsyncStream<Void>.Continuation?
        /// What part 2 waits on: a stream nothing is sent on, whose `next()` ends when the
        /// waiting task is cancelled.
        let never = AsyncStream.makeStream(of: Void.self)
        var partLimit: (count: Int, upload: String, setting: String) { (3, "one test upload", "partSize") }
        var leftBehind: String { "The parts stay." }

        func writeOnce(_ data: Data, parts: StreamParts) async throws -> RemoteFile {
            steps.withLock { $0.append("once \(data.count)") }
            return RemoteFile(path: try ObjectKey("k"), size: Int64(data.count))
        }

        func initiate() async throws -> String {
            steps.withLock { $0.append("initiate") }
            if initiateFails { throw BuckiaError(.permissionDenied, "no uploads here") }
            return "U"
        }

        func writePart(_ number: Int, _ part: Data, upload: String) async throws -> Int {
            if number == failing { throw BuckiaError(.transient, "part \(number) refused") }
            if number == 2, let stalls {
                stalls.yield()
                var waiting = never.stream.makeAsyncIterator()
                _ = await waiting.next()
                try Task.checkCancellation()
            }
            steps.withLock { $0.append("part \(number) \(part.count) \(upload)") }
            return number * 100
        }

        func complete(_ upload: String, parts: [(number: Int, receipt: Int)], size: Int64) async throws -> RemoteFile {
            steps.withLock { $0.append("complete \(upload) \(parts.map(\.receipt)) \(size)") }
            return RemoteFile(path: try ObjectKey("k"), size: size)
        }

        func abort(_ upload: String) async throws {
            steps.withLock { $0.append("abort \(upload)\(Task.isCancelled ? " (cancelled)" : "")") }
            if abortFails { throw BuckiaError(.transient, "abort refused") }
        }

        func finished(_ upload: String) async { steps.withLock { $0.append("finished \(upload)") } }
    }

    static func write(
        _ count: Int, to recorder: Recorder, options: UploadOptions = UploadOptions(), partSize: Int = 10, memory: UploadMemory = UploadMemory()
    ) async throws -> RemoteFile {
        let data = Data((0..<count).map { UInt8(truncatingIfNeeded: $0) })
        return try await MultipartWriter.write(
            .of(data, chunkSize: 4), to: recorder, key: try ObjectKey("k"), options: options, partSize: partSize, width: 2, memory: memory)
    }

    @Test("A stream that fits one part is written once, and no upload is started", arguments: [0, 1, 10])
    func once(_ count: Int) async throws {
        let recorder = Recorder()
        #expect(try await Self.write(count, to: recorder).size == Int64(count))
        #expect(recorder.steps.withLock { $0 } == ["once \(count)"])
    }

    @Test("A longer stream goes in parts, completed with their receipts in order and the stream's size")
    func parts() async throws {
        let recorder = Recorder()
        #expect(try await Self.write(25, to: recorder).size == 25)
        let steps = recorder.steps.withLock { $0 }
        #expect(steps.first == "initiate")
        #expect(Set(steps.dropFirst().prefix(3)) == ["part 1 10 U", "part 2 10 U", "part 3 5 U"])
        #expect(Array(steps.suffix(2)) == ["complete U [100, 200, 300] 25", "finished U"])
    }

    @Test("A stream longer than the part limit fails, naming the setting to raise, and its upload is aborted, never completed")
    func limit() async throws {
        let recorder = Recorder()
        let error = await #expect(throws: BuckiaError.self) { try await Self.write(35, to: recorder) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("longer than 3 parts") == true && error?.message.contains("one test upload can hold; raise partSize") == true, "\(String(describing: error))")
        let steps = recorder.steps.withLock { $0 }
        #expect(!steps.contains { $0.hasPrefix("part 4") || $0.hasPrefix("complete") }, "\(steps)")
        #expect(Array(steps.suffix(2)) == ["finished U", "abort U"])
    }

    @Test("A failed part aborts the upload; a failed abort says what stays behind")
    func failure() async throws {
        for abortFails in [false, true] {
            let recorder = Recorder(failing: 2, abortFails: abortFails)
            let error = await #expect(throws: BuckiaError.self) { try await Self.write(25, to: recorder) }
            #expect(error?.code == .transient)
            #expect(error?.message.contains("part 2 refused") == true)
            #expect(error?.message.contains("The parts stay.") == abortFails, "\(String(describing: error))")
            let steps = recorder.steps.withLock { $0 }
            #expect(!steps.contains { $0.hasPrefix("complete") } && Array(steps.suffix(2)) == ["finished U", "abort U"], "\(steps)")
        }
    }

    @Test("Bytes that miss a known checksum abort the upload before it completes")
    func checksum() async throws {
        let recorder = Recorder()
        let wrong = UploadOptions(knownChecksums: [.sha256: String(repeating: "0", count: 64)])
        let error = await #expect(throws: BuckiaError.self) { try await Self.write(25, to: recorder, options: wrong) }
        #expect(error?.code == .checksumMismatch)
        let steps = recorder.steps.withLock { $0 }
        #expect(!steps.contains { $0.hasPrefix("complete") } && steps.last == "abort U", "\(steps)")
    }

    @Test("Every path gives back the memory it reserved: one request, a refused start, a failed part, a wrong checksum")
    func memoryComesBack() async throws {
        let memory = UploadMemory(limit: 8 << 20)
        // Longer than the first MiB, so its part is reserved, yet one request.
        _ = try await Self.write((1 << 20) + 1, to: Recorder(), partSize: 2 << 20, memory: memory)
        #expect(memory.available == memory.limit)
        await #expect(throws: BuckiaError.self) { try await Self.write(25, to: Recorder(initiateFails: true), memory: memory) }
        #expect(memory.available == memory.limit)
        await #expect(throws: BuckiaError.self) { try await Self.write(25, to: Recorder(failing: 2), memory: memory) }
        #expect(memory.available == memory.limit)
        let wrong = UploadOptions(knownChecksums: [.sha256: String(repeating: "0", count: 64)])
        await #expect(throws: BuckiaError.self) { try await Self.write(25, to: Recorder(), options: wrong, memory: memory) }
        #expect(memory.available == memory.limit)
    }

    @Test("A cancelled upload is still aborted, by a task the cancellation does not reach")
    func cancelledUploadIsAborted() async throws {
        let (started, stalls) = AsyncStream.makeStream(of: Void.self)
        let recorder = Recorder(stalls: stalls)
        let upload = Task { try await Self.write(25, to: recorder) }
        var waiting = started.makeAsyncIterator()
        _ = await waiting.next()
        upload.cancel()
        let error = await #expect(throws: BuckiaError.self) { try await upload.value }
        #expect(error?.code == .cancelled)
        #expect(recorder.steps.withLock { $0 }.last == "abort U", "\(recorder.steps.withLock { $0 })")
    }
}
