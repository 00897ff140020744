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
        let data = Data((0..<25_500).map { UInt8(truncatingIfNeeded: $0) })
        // Parts alive: read from the stream and not yet sent.
        let alive = Locked((now: 0, most: 0, read: 0))
        let source = Self.stream(data, chunks: [333])
        let counted = ByteStream {
            guard let chunk = try await source.next() else { return nil }
            alive.withLock { state in
                let before = state.read / partSize
                state.read += chunk.count
                if state.read / partSize > before || state.read == data.count {
                    state.now += 1
                    state.most = max(state.most, state.now)
                }
            }
            return chunk
        }
        let parts = StreamParts(counted)
        let head = try #require(try await parts.next(upTo: partSize))
        let results = try await parts.sendAll(partsOf: partSize, startingWith: [head], width: 3) { number, part in
            await Task.yield()
            alive.withLock { $0.now -= 1 }
            return (number, part)
        }
        #expect(results.count == 26)
        let joined = results.keys.sorted().reduce(into: Data()) { $0.append(results[$1]?.1 ?? Data()) }
        #expect(joined == data)
        #expect(results.allSatisfy { $0.key == $0.value.0 })
        // Three sending, one read ahead, and the one being cut from the stream.
        #expect(alive.withLock { $0.most } <= 5)
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
