/// Runs `body` over `items` with at most `width` in flight, and rethrows the first error
/// (cancelling the rest).
///
/// Transfers, deletes and multipart parts all fan out this way, bounded so memory and
/// connections stay proportional to `width`, not to the number of items.
package func forEachConcurrently<T: Sendable>(
    _ items: [T], width: Int, _ body: @escaping @Sendable (T) async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var iterator = items.makeIterator()
        for _ in 0..<max(1, width) {
            guard let item = iterator.next() else { break }
            group.addTask { try await body(item) }
        }
        while try await group.next() != nil {
            if let item = iterator.next() { group.addTask { try await body(item) } }
        }
    }
}
