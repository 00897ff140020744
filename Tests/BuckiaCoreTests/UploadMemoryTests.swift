import BuckiaCore
import Foundation
import Testing

/// ``UploadMemory``: the budget every streamed upload of a process reserves its parts from.
@Suite("Upload memory shared by streamed uploads")
struct UploadMemoryTests {
    /// Yields until `condition` holds, a bounded number of turns (counted, not timed).
    static func settle(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<10_000 where !condition() { await Task.yield() }
        return condition()
    }

    @Test("A reservation waits for bytes handed back, first come first served; one beyond the limit gets the whole limit")
    func waitsInOrder() async throws {
        let memory = UploadMemory(limit: 10)
        #expect(try await memory.reserve(6) == 6)
        #expect(memory.available == 4)
        let second = Task { try await memory.reserve(8) }
        #expect(await Self.settle { memory.waiting == 1 })
        // 1 byte would fit in the 4 left, but the 8 asked for first goes first.
        let third = Task { try await memory.reserve(1) }
        #expect(await Self.settle { memory.waiting == 2 })
        #expect(memory.available == 4)
        memory.release(6)
        #expect(try await second.value == 8)
        #expect(try await third.value == 1)
        #expect(memory.available == 1 && memory.waiting == 0)
        memory.release(9)
        #expect(try await memory.reserve(50) == 10, "a part larger than the budget goes alone")
        memory.release(10)
        #expect(memory.available == 10)
    }

    @Test("A reservation cancelled while it waits fails as cancelled, holds nothing, and lets the next one go")
    func cancelledWhileWaiting() async throws {
        let memory = UploadMemory(limit: 10)
        _ = try await memory.reserve(7)
        let blocked = Task { try await memory.reserve(5) }
        #expect(await Self.settle { memory.waiting == 1 })
        let behind = Task { try await memory.reserve(3) }
        #expect(await Self.settle { memory.waiting == 2 })
        blocked.cancel()
        let error = await #expect(throws: BuckiaError.self) { try await blocked.value }
        #expect(error?.code == .cancelled)
        #expect(try await behind.value == 3, "the one behind fits once the cancelled one left")
        #expect(memory.available == 0 && memory.waiting == 0)
        memory.release(10)
        #expect(memory.available == 10)
    }

    @Test("Two streamed uploads read no more parts together than the budget holds, and hand every byte back")
    func sharedBySendAll() async throws {
        let memory = UploadMemory(limit: 250)  // two parts of 100
        let read = Locked(0)
        let gate = Locked((open: false, waiting: [CheckedContinuation<Void, Never>]()))
        func upload(_ seed: UInt8) -> Task<[Int: Data], any Error> {
            let data = Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0) &+ seed })
            let source = StreamPartsTests.stream(data, chunks: [100])
            let counted = ByteStream {
                guard let chunk = try await source.next() else { return nil }
                read.withLock { $0 += chunk.count }
                return chunk
            }
            return Task {
                try await StreamParts(counted).sendAll(partsOf: 100, startingWith: [], width: 4, memory: memory) { _, part in
                    await withCheckedContinuation { continuation in
                        let now = gate.withLock { gate -> Bool in
                            if !gate.open { gate.waiting.append(continuation) }
                            return gate.open
                        }
                        if now { continuation.resume() }
                    }
                    return part
                }
            }
        }
        let first = upload(0)
        let second = upload(100)
        #expect(await Self.settle { memory.available == 50 && memory.waiting == 2 })
        // Width 4 each would read 10 parts with every send held; the budget allows 2.
        #expect(read.withLock { $0 } == 200)
        for continuation in gate.withLock({ gate -> [CheckedContinuation<Void, Never>] in
            gate.open = true
            defer { gate.waiting = [] }
            return gate.waiting
        }) { continuation.resume() }
        let results = [try await first.value, try await second.value]
        for (index, parts) in results.enumerated() {
            let joined = parts.keys.sorted().reduce(into: Data()) { $0.append(parts[$1] ?? Data()) }
            #expect(joined == Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0) &+ UInt8(index * 100) }))
        }
        #expect(memory.available == 250 && memory.waiting == 0)
    }

    @Test("A streamed upload that fails hands its reservations back")
    func failureReleases() async throws {
        struct Refused: Error {}
        let memory = UploadMemory(limit: 1_000)
        let head = try #require(try await memory.reserve(100) == 100 ? Data(count: 100) : nil)
        await #expect(throws: Refused.self) {
            _ = try await StreamParts(StreamPartsTests.stream(Data(count: 10_000), chunks: [100])).sendAll(
                partsOf: 100, startingWith: [head], width: 3, memory: memory
            ) { number, _ in
                if number == 5 { throw Refused() }
                return number
            }
        }
        #expect(memory.available == 1_000)
    }
}
