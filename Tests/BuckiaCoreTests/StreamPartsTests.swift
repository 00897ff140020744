import BuckiaCore
import Foundation
import Testing

@Suite("Streams cut into parts for uploads")
struct StreamPartsTests {
    /// A stream of `data` in chunks whose sizes cycle through `sizes`.
    static func stream(_ data: Data, chunks sizes: [Int]) -> ByteStream {
        let state = Locked((offset: 0, turn: 0))
        return ByteStream {
            state.withLock { state -> Data? in
                guard state.offset < data.count else { return nil }
                let end = min(data.count, state.offset + sizes[state.turn % sizes.count])
                defer { (state.offset, state.turn) = (end, state.turn + 1) }
                return data.subdata(in: state.offset..<end)
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let size: Int
        let chunks: [Int]
        let part: Int
        var testDescription: String { "\(size) bytes in chunks of \(chunks), parts of \(part)" }
    }

    @Test(arguments: [
        Case(size: 0, chunks: [7], part: 10), Case(size: 1, chunks: [7], part: 10), Case(size: 10, chunks: [10], part: 10),
        Case(size: 11, chunks: [10], part: 10), Case(size: 100, chunks: [1], part: 7), Case(size: 100, chunks: [33, 1, 64], part: 10),
        Case(size: 1000, chunks: [250], part: 1000), Case(size: 1001, chunks: [3, 997, 2], part: 250),
        // Parts past PartBuffer.smallest (1 MiB) move to pages of their own; chunks larger
        // than a part, exactly a part, and straddling the move.
        Case(size: (3 << 20) + 5, chunks: [131_072, 7, 1 << 20], part: (1 << 20) + 3),
        Case(size: 5 << 20, chunks: [3 << 20], part: 2 << 20), Case(size: 2 << 20, chunks: [1 << 20], part: 1 << 20),
        Case(size: (1 << 20) - 1, chunks: [65_536], part: 4 << 20),
    ])
    func partsAreExactAndComplete(_ example: Case) async throws {
        let data = Data((0..<example.size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let parts = try StreamParts(Self.stream(data, chunks: example.chunks), hashing: [.sha256])
        var joined = Data()
        var sizes: [Int] = []
        while let part = try await parts.next(upTo: example.part) {
            sizes.append(part.count)
            joined.append(part)
        }
        #expect(joined == data)
        // Every part full but the last, which is never empty.
        #expect(sizes.dropLast().allSatisfy { $0 == example.part })
        #expect(sizes.last.map { $0 > 0 && $0 <= example.part } ?? (example.size == 0))
        #expect(parts.count == Int64(example.size))
        #expect(try await parts.isAtEnd())
        #expect(parts.finalize()[.sha256] == Hashing.sha256(data))
    }

    @Test("a PartBuffer takes no more than its room and hands out exactly what it took")
    func partBuffer() {
        var buffer = PartBuffer(capacity: 10)
        #expect(buffer.append(Data([1, 2, 3])) == 3)
        #expect(buffer.append(Data(0..<20).dropFirst(4)) == 7)  // a slice: its own indices
        #expect(buffer.remaining == 0)
        #expect(buffer.append(Data([9])) == 0)
        #expect(buffer.data() == Data([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))
        #expect(PartBuffer(capacity: 4096).data().isEmpty)
    }

    /// A stream often ends because its task was cancelled (a pipe's producer killed by the
    /// same Ctrl-C): what was read then is no whole object, so it must not read as one.
    @Test("A cancelled task's stream ends in cancelled, at a chunk and at its end", arguments: [0, 10])
    func cancelledStream(_ size: Int) async throws {
        let task = Task {
            let parts = StreamParts(Self.stream(Data(repeating: 1, count: size), chunks: [4]))
            var handed = 0
            while let part = try await parts.next(upTo: 4) { handed += part.count }
            return handed
        }
        task.cancel()
        let error = await #expect(throws: BuckiaError.self) { try await task.value }
        #expect(error?.code == .cancelled)
    }

    @Test("isAtEnd reads ahead without losing the byte it read")
    func atEndKeepsTheByte() async throws {
        let parts = StreamParts(Self.stream(Data([1, 2, 3]), chunks: [2]))
        #expect(try await parts.next(upTo: 2) == Data([1, 2]))
        #expect(try await parts.isAtEnd() == false)
        #expect(try await parts.next(upTo: 2) == Data([3]))
        #expect(try await parts.isAtEnd())
        #expect(try await parts.next(upTo: 2) == nil)
    }

    @Test("sendAll holds at most width + 1 parts, sends each once in number order, and keeps going until the stream ends")
    func boundedAndComplete() async throws {
        let partSize = 1_000
        let width = 3
        let data = Data((0..<25_500).map { UInt8(truncatingIfNeeded: $0) })
        let read = Locked(0)
        let source = Self.stream(data, chunks: [333])
        let counted = ByteStream {
            guard let chunk = try await source.next() else { return nil }
            read.withLock { $0 += chunk.count }
            return chunk
        }
        // Every send waits at the gate until the test opens it; meanwhile sendAll may read
        // only the parts it may hold.
        let gate = Locked((open: false, waiting: [CheckedContinuation<Void, Never>]()))
        let parts = StreamParts(counted)
        let head = try #require(try await parts.next(upTo: partSize))
        let upload = Task {
            try await parts.sendAll(partsOf: partSize, startingWith: [head], width: width) { number, part in
                await withCheckedContinuation { continuation in
                    let now = gate.withLock { gate -> Bool in
                        if !gate.open { gate.waiting.append(continuation) }
                        return gate.open
                    }
                    if now { continuation.resume() }
                }
                return (number, part)
            }
        }
        // A bounded number of turns for sendAll to read as far as it would (all of it, were
        // it not bounded): counted in yields, not time.
        for _ in 0..<2_000 { await Task.yield() }
        let readWhileHeld = read.withLock { $0 }
        for continuation in gate.withLock({ gate -> [CheckedContinuation<Void, Never>] in
            gate.open = true
            defer { gate.waiting = [] }
            return gate.waiting
        }) { continuation.resume() }
        let results = try await upload.value
        // `width` sending, one read and waiting for a turn, and at most a chunk of the next.
        #expect(readWhileHeld <= (width + 1) * partSize + 333, "read \(readWhileHeld) bytes while every send was held")
        #expect(results.count == 26)
        let joined = results.keys.sorted().reduce(into: Data()) { $0.append(results[$1]?.1 ?? Data()) }
        #expect(joined == data)
        #expect(results.allSatisfy { $0.key == $0.value.0 })
    }

    @Test("sendAll stops at the first failure, of a send or of the stream")
    func stopsAtFailure() async throws {
        struct Refused: Error {}
        let parts = StreamParts(Self.stream(Data(count: 10_000), chunks: [100]))
        let sent = Locked(0)
        await #expect(throws: Refused.self) {
            _ = try await parts.sendAll(partsOf: 100, startingWith: [], width: 2) { number, _ in
                sent.withLock { $0 += 1 }
                if number == 5 { throw Refused() }
                return number
            }
        }
        #expect(sent.withLock { $0 } < 100)

        let failing = ByteStream { throw BuckiaError(.io, "broken source") }
        await #expect(throws: BuckiaError.self) {
            _ = try await StreamParts(failing).sendAll(partsOf: 100, startingWith: [], width: 2) { number, _ in number }
        }
    }
}
