/// Runs `body` over `items` with at most `width` in flight, and rethrows the first error
/// (cancelling the rest).
///
/// Transfers, deletes and multipart parts all fan out this way, bounded so memory and
/// connections stay proportional to `width`, not to the number of items.
///
/// `width` workers each take the next item in order until none is left, rather than one child
/// task per item: a sync's small local copies finish without suspending, and creating,
/// scheduling and completing a task for each of 100,000 files cost more of a first sync's
/// CPU than its path lookups did (Docs/Benchmarks.md). Items start in order; once a body
/// throws, no further item starts.
package func forEachConcurrently<T: Sendable>(
    _ items: [T], width: Int, _ body: @escaping @Sendable (T) async throws -> Void
) async throws {
    let count = items.count
    let workers = min(max(1, width), count)
    guard workers > 1 else {
        for item in items { try await body(item) }
        return
    }
    let cursor = ItemCursor(count: count)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<workers {
            group.addTask {
                while let index = cursor.next() {
                    do {
                        try await body(items[index])
                    } catch {
                        cursor.stop()
                        throw error
                    }
                }
            }
        }
        try await group.waitForAll()
    }
}

/// Hands out the indices `0..<count` once each, across tasks, until stopped.
private final class ItemCursor: Sendable {
    private let state: Locked<Int>
    private let count: Int

    init(count: Int) {
        self.count = count
        state = Locked(0)
    }

    /// The next index no worker has taken, or nil when none is left or a worker failed.
    func next() -> Int? {
        state.withLock { next in
            guard next < count else { return nil }
            defer { next += 1 }
            return next
        }
    }

    /// Starts no further item: the group is about to rethrow a worker's error.
    func stop() { state.withLock { $0 = count } }
}
