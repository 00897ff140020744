import BuckiaCore
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

/// Runs `body` on `threads` threads released at the same moment, `rounds` times (the round's
/// number given to each), and returns what each failure said: for races between openers,
/// which processes started one by one rarely hit.
public func simultaneously(threads: Int, rounds: Int, _ body: @escaping @Sendable (_ round: Int) throws -> Void) -> [String] {
    var failures: [String] = []
    for round in 0..<rounds {
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let errors = Locked<[String]>([])
        for _ in 0..<threads {
            done.enter()
            Thread.detachNewThread {
                start.wait()
                do {
                    try body(round)
                } catch {
                    errors.withLock { $0.append("round \(round): \(error)") }
                }
                done.leave()
            }
        }
        for _ in 0..<threads { start.signal() }
        done.wait()
        failures += errors.withLock { $0 }
    }
    return failures
}
