import BuckiaCore
import Foundation

/// Runs async work from a thread of the HTTP server's own (never a pool thread) and waits.
enum Blocking {
    /// Starts `body` on the gateway's own threads where the platform has task executors, else
    /// as a detached task on the cooperative pool (macOS 14).
    static func start(_ body: @escaping @Sendable () async -> Void) {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            Task(executorPreference: GatewayExecutor.shared) { await body() }
        } else {
            Task.detached { await body() }
        }
    }

    static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        start {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else {
            throw BuckiaError(.io, "The gateway lost the result of a backend call.")
        }
        return try result.get()
    }
}

/// The threads the gateway's backend calls run on: a task executor of its own, so a gateway
/// serves even while the rest of the process keeps every thread of the cooperative pool busy
/// or blocked (an app that embeds it, a test run beside it). Each connection's thread waits
/// for its call; the call itself, and the default actors it touches, run here. The threads are
/// a ``BuckiaCore/BlockingPool``'s, named `buckia-gw`, shared by every gateway of the process.
///
/// Task executors came with macOS 15 (and iOS 18, tvOS 18); on Linux they are always there.
/// On macOS 14 ``Blocking/start(_:)`` runs the call as a detached task on the cooperative pool
/// instead, and the gateway then shares that pool with the rest of the process.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class GatewayExecutor: TaskExecutor {
    /// One executor for every gateway of the process; its threads live as long as the process.
    static let shared = GatewayExecutor(threads: max(4, ProcessInfo.processInfo.activeProcessorCount * 2))

    let pool: BlockingPool

    private init(threads: Int) {
        // The stack a thread has by default on Linux (8 MiB): the backend's code runs here, and
        // ran on such threads before the pool.
        pool = BlockingPool(threads: threads, name: "buckia-gw", stackSize: 8 << 20)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pool.execute { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
