import BuckiaCore
import Testing

/// `forEachConcurrently`, which every fan-out (sync steps, deletes, multipart parts) runs
/// through: each item once, never more than `width` at a time, nothing new after a failure.
@Suite("forEachConcurrently")
struct ConcurrentlyTests {
    private struct Failure: Error {}

    /// What the bodies saw: the items they ran, and the most running at once.
    private final class Record: Sendable {
        let state = Locked((started: [Int](), running: 0, most: 0))

        func start(_ item: Int) {
            state.withLock {
                $0.started.append(item)
                $0.running += 1
                $0.most = max($0.most, $0.running)
            }
        }

        func end() { state.withLock { $0.running -= 1 } }
    }

    @Test("Every item runs exactly once, never more than width at once", arguments: [(0, 4), (1, 4), (3, 8), (100, 1), (100, 4), (1_000, 16)])
    func everyItemOnce(count: Int, width: Int) async throws {
        let record = Record()
        try await forEachConcurrently(Array(0..<count), width: width) { item in
            record.start(item)
            // Suspends, so the other workers take items meanwhile.
            await Task.yield()
            await Task.yield()
            record.end()
        }
        let (started, running, most) = record.state.withLock { $0 }
        #expect(started.sorted() == Array(0..<count))
        #expect(running == 0)
        #expect(most <= width)
        if count > 1 && width > 1 { #expect(most > 1, "items ran one at a time under width \(width)") }
    }

    @Test("A failure is rethrown, and no item after it starts", arguments: [1, 2, 4])
    func failureStops(width: Int) async throws {
        let record = Record()
        let failing = 10
        await #expect(throws: Failure.self) {
            try await forEachConcurrently(Array(0..<200), width: width) { item in
                record.start(item)
                await Task.yield()
                record.end()
                if item == failing { throw Failure() }
            }
        }
        let started = record.state.withLock { $0.started }
        #expect(started.contains(failing))
        // Items start in order, and each worker takes at most one more before it hears.
        #expect(started.max() ?? 0 <= failing + width, "started \(started.count) items, up to \(started.max() ?? 0)")
    }
}
