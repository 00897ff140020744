import Foundation

/// Runs blocking work (waiting for a child process, reading a raw socket, polling a file) on a
/// thread of its own, never one of the cooperative pool's.
///
/// The pool has one thread a core; a test that blocks one while a child process runs starves
/// whatever else in the test process needs the pool (a server answering that child, another
/// test's live query), and on a two-core machine that turned into time-outs.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
