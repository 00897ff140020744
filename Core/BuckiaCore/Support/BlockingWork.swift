import Foundation

/// A few threads of Buckia's own for work that blocks (whole-file copies, `fsync`, `syncfs`),
/// so it never holds one of the cooperative pool's threads, of which there are only as many as
/// cores: two blocked copies on this 2-core machine would stall every other task.
///
/// As swift-nio's `NIOThreadPool`: jobs queue for a fixed set of threads (named `buckia-io`).
/// Cancelling the awaiting task marks the job's token; a copy loop checks it between chunks
/// (``checkCancellation(_:)``) and stops with ``BuckiaError/Code/cancelled``, leaving what the
/// caller's atomic write leaves: nothing. The task's ``TransferProgress/observer`` goes with the
/// job, so progress keeps counting on the other thread.
package enum BlockingWork {
    /// Set when the awaiting task is cancelled.
    package final class Token: Sendable {
        private let flag = Locked(false)

        package var isCancelled: Bool { flag.withLock { $0 } }

        func cancel() { flag.withLock { $0 = true } }
    }

    /// The token of the job running on this thread, if any.
    @TaskLocal package static var token: Token?

    /// Runs `body` on one of the pool's threads and returns what it returns.
    ///
    /// - Throws: What `body` throws; ``BuckiaError/Code/cancelled`` when the task was cancelled
    ///   before the job started.
    package static func run<T: Sendable>(_ operation: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        if Task.isCancelled { throw cancelled(operation) }
        let token = Token()
        let observer = TransferProgress.observer
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                pool.submit {
                    let result = Result {
                        try $token.withValue(token) {
                            try TransferProgress.$observer.withValue(observer) { try body() }
                        }
                    }
                    continuation.resume(with: result)
                }
            }
        } onCancel: {
            token.cancel()
        }
    }

    /// Throws ``BuckiaError/Code/cancelled`` when the task that started the running job was
    /// cancelled; a copy loop calls it between chunks. Outside a job it checks the current task.
    package static func checkCancellation(_ operation: String) throws {
        if let token {
            if token.isCancelled { throw cancelled(operation) }
        } else if Task.isCancelled {
            throw cancelled(operation)
        }
    }

    private static func cancelled(_ operation: String) -> BuckiaError {
        BuckiaError(.cancelled, "The \(operation) was cancelled; nothing of it was kept.", operation: operation)
    }

    /// Twice the cores, between 4 and 16: enough for the copies of a sync's parallel transfers,
    /// few enough that the disk, not the scheduler, sets the pace.
    private static let pool = Pool(threads: Swift.max(4, Swift.min(16, 2 * ProcessInfo.processInfo.activeProcessorCount)))

    private final class Pool: @unchecked Sendable {
        // `jobs` is guarded by `condition`.
        private let condition = NSCondition()
        private var jobs: [@Sendable () -> Void] = []

        init(threads: Int) {
            for _ in 0..<threads {
                let thread = Thread { [self] in work() }
                thread.stackSize = 1 << 20
                thread.start()
            }
        }

        func submit(_ job: @escaping @Sendable () -> Void) {
            condition.lock()
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }

        private func work() {
            SystemCalls.nameThread("buckia-io")
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }
    }
}
