import Foundation

/// Blocking work of the built-in parts that have no ``SharedResources`` of their own (the
/// catalog, the database exchange, the resource cache): on the ``BlockingPool`` of
/// ``SharedResources/process``, or on `pool` where the caller has one (a provider, from its
/// context).
package enum BlockingWork {
    /// Runs `body` on `pool`'s threads, or the process's, and returns what it returns.
    ///
    /// - Throws: What `body` throws; ``BuckiaError/Code/cancelled`` when the task was cancelled
    ///   before the job started, or the pool was shut down.
    package static func run<T: Sendable>(
        _ operation: String, on pool: BlockingPool? = nil, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await (pool ?? SharedResources.process.blockingPool).run(operation, body)
    }

    /// Throws ``BuckiaError/Code/cancelled`` when the task that started the running job was
    /// cancelled; a copy loop calls it between chunks. Outside a job it checks the current task.
    package static func checkCancellation(_ operation: String) throws {
        try BlockingPool.checkCancellation(operation)
    }
}
