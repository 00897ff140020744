import Foundation

/// Threads of Buckia's own for work that blocks (whole-file copies, `fsync`, a SQLite
/// transaction), so it never holds one of the cooperative pool's threads, of which there are
/// only as many as cores: two blocked copies on a 2-core machine would stall every other task.
///
/// The shape of swift-nio's `NIOThreadPool`: jobs queue for a fixed set of threads, started
/// with the first job; ``shutdown()`` refuses new jobs, lets the queued ones finish, and
/// returns when every thread has ended. Each ``SharedResources`` owns one
/// (``SharedResources/blockingPool``), so shutting the resources down stops its threads; a
/// third-party provider runs its blocking calls on its context's pool the same way.
///
/// ```swift
/// let pool = try context.resources.blockingPool
/// let listing = try await pool.run("list the FTP folder") { try ftp.list(folder) }
/// ```
///
/// Cancelling the awaiting task cancels a job that has not started; one that has started sees
/// it through ``BlockingPool/checkCancellation(_:)`` between its steps (a copy loop, between
/// chunks) and stops with ``BuckiaError/Code/cancelled``. The task's
/// ``TransferProgress/observer`` goes with the job, so progress keeps counting on the other thread.
public final class BlockingPool: ShutdownableResource, ThreadOwningResource {
    /// Set when the awaiting task is cancelled.
    package final class Token: Sendable {
        private let flag = Locked(false)

        package var isCancelled: Bool { flag.withLock { $0 } }

        func cancel() { flag.withLock { $0 = true } }
    }

    /// The token of the job running on this thread, if any.
    @TaskLocal package static var token: Token?

    private struct Job: Sendable {
        let run: @Sendable () -> Void
        let fail: @Sendable (any Error) -> Void
    }

    private struct State: Sendable {
        var jobs: [Job] = []
        /// The first job not yet taken: `jobs` is a queue read from here.
        var next = 0
        /// Whether the threads were started (by the first job).
        var started = false
        var threads: [SystemCalls.JoinableThread] = []
        /// The kernel ids of the threads started (where the platform tells them).
        var threadIDs: [Int32] = []
        /// Threads started or being started that have not ended, plus one while
        /// ``startThreads(_:)`` has not yet recorded them in `threads`.
        var running = 0
        var isShutDown = false
        /// The first ``shutdown()``, waiting for the last thread to end.
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// Set by the first ``shutdown()`` once it has joined every thread.
        var ended = false
        /// Later ``shutdown()`` calls, waiting for the first to have joined every thread.
        var endWaiters: [CheckedContinuation<Void, Never>] = []
        var observer: (@Sendable (ShutdownStep) -> Void)?
    }

    /// A step of ``shutdown()`` a test can hold or count.
    package enum ShutdownStep: Sendable {
        /// The first call has seen every thread end and is about to join them.
        case joining
        /// A later call waits for the first to finish.
        case waitingForEnd
    }

    /// The most threads the pool runs.
    public let threadCount: Int
    private let name: String
    /// Each thread's stack, in bytes.
    private let stackSize: Int
    private let state = Locked(State())
    /// One signal per job queued and one per thread told to end.
    private let wakeUp = DispatchSemaphore(value: 0)

    /// A pool of `threads` threads (at least one), named `name` as the system's tools show it
    /// (15 bytes at most on Linux). No thread starts before the first job.
    public convenience init(threads: Int, name: String = "buckia-io") {
        self.init(threads: threads, name: name, stackSize: 1 << 20)
    }

    /// A pool whose threads have stacks of `stackSize` bytes: 1 MiB for blocking calls, more for
    /// threads that run other code's tasks (the gateway's executor).
    package init(threads: Int, name: String, stackSize: Int) {
        threadCount = Swift.max(1, threads)
        self.name = name
        self.stackSize = stackSize
    }

    /// Twice the cores, between 4 and 16: enough for the copies of a sync's parallel transfers,
    /// few enough that the disk, not the scheduler, sets the pace.
    public static var defaultThreadCount: Int {
        Swift.max(4, Swift.min(16, 2 * ProcessInfo.processInfo.activeProcessorCount))
    }

    /// Runs `body` on one of the pool's threads and returns what it returns.
    ///
    /// - Parameter operation: What the job does, for the error when it is cancelled ("copy
    ///   photo.jpg").
    /// - Throws: What `body` throws; ``BuckiaError/Code/cancelled`` when the task was cancelled
    ///   before the job started, or the pool was shut down.
    public func run<T: Sendable>(_ operation: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        if Task.isCancelled { throw Self.cancelled(operation) }
        let token = Token()
        let observer = TransferProgress.observer
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                submit(Job(
                    run: {
                        guard !token.isCancelled else { return continuation.resume(throwing: Self.cancelled(operation)) }
                        let result = Result {
                            try Self.$token.withValue(token) {
                                try TransferProgress.$observer.withValue(observer) { try body() }
                            }
                        }
                        continuation.resume(with: result)
                    },
                    fail: { continuation.resume(throwing: $0) }))
            }
        } onCancel: {
            token.cancel()
        }
    }

    /// Runs `body` on one of the pool's threads without waiting for it: what a task executor
    /// built on the pool hands over. Work handed over is never dropped: after ``shutdown()``, or
    /// when no thread could be started, `body` runs on a thread of its own.
    package func execute(_ body: @escaping @Sendable () -> Void) {
        submit(Job(run: body, fail: { _ in Thread { body() }.start() }))
    }

    /// Throws ``BuckiaError/Code/cancelled`` when the task that started the running job was
    /// cancelled; a long job calls it between its steps. Outside a job it checks the current task.
    public static func checkCancellation(_ operation: String) throws {
        if let token {
            if token.isCancelled { throw cancelled(operation) }
        } else if Task.isCancelled {
            throw cancelled(operation)
        }
    }

    /// Refuses new jobs, lets the queued ones run, and returns when every thread of the pool
    /// has ended. Every call waits for the same end: the first joins the threads, and later
    /// calls return when it has.
    public func shutdown() async {
        let (first, observer) = state.withLock { state in
            defer { state.isShutDown = true }
            return (!state.isShutDown, state.observer)
        }
        guard first else {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ended = state.withLock { state -> Bool in
                    guard !state.ended else { return true }
                    state.endWaiters.append(continuation)
                    return false
                }
                if ended { continuation.resume() } else { observer?(.waitingForEnd) }
            }
            return
        }
        // Each thread ends on a signal that finds the queue empty, after the queued jobs; a
        // signal more than there are threads (some failed to start) is never waited for.
        for _ in 0..<threadCount { wakeUp.signal() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state -> Bool in
                guard state.running > 0 else { return true }
                state.waiters.append(continuation)
                return false
            }
            if ended { continuation.resume() }
        }
        // The threads have signalled their last act; joining waits out only their return.
        observer?(.joining)
        for thread in state.withLock({ $0.threads }) { thread.join() }
        let waiters = state.withLock { state in
            state.ended = true
            defer { state.endWaiters = [] }
            return state.endWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Calls `observer` at each step of ``shutdown()``, on the thread that takes it; set
    /// before the shutdown begins.
    package func observeShutdown(_ observer: @escaping @Sendable (ShutdownStep) -> Void) {
        state.withLock { $0.observer = observer }
    }

    /// Whether ``shutdown()`` has begun (new jobs are refused).
    package var isShutDown: Bool { state.withLock { $0.isShutDown } }

    /// The kernel ids of the threads the pool started (none where the platform does not say),
    /// for tests that check they are gone.
    package var threadIDs: [Int32] { state.withLock { $0.threadIDs } }

    /// Queues `job`, starting the threads with the first; a job the pool cannot take fails.
    private func submit(_ job: Job) {
        let starting = state.withLock { state -> Int? in
            guard !state.isShutDown else { return nil }
            state.jobs.append(job)
            guard !state.started else { return 0 }
            state.started = true
            state.running = threadCount + 1
            return threadCount
        }
        guard let starting else {
            return job.fail(BuckiaError(.cancelled, "The blocking-work pool was shut down; use one that is live.", operation: "run blocking work"))
        }
        if starting > 0 { startThreads(starting) }
        wakeUp.signal()
    }

    private func startThreads(_ count: Int) {
        var threads: [SystemCalls.JoinableThread] = []
        var failure: (any Error)?
        // Each thread says it has started (and its id is known) before the first job is queued
        // to it: a microsecond each, once in the pool's life.
        let ready = DispatchSemaphore(value: 0)
        for _ in 0..<count {
            do {
                threads.append(try SystemCalls.startThread(stackSize: stackSize) { [self] in work(ready) })
            } catch {
                failure = error  // fewer threads serve the queue
                break
            }
        }
        for _ in threads { ready.wait() }
        let (waiters, failed) = state.withLock { state -> ([CheckedContinuation<Void, Never>], [Job]) in
            state.threads = threads
            // Threads that did not start, and the count held until they were recorded here.
            state.running -= count - threads.count + 1
            var failed: [Job] = []
            if threads.isEmpty {
                // No thread to run the queue: its jobs fail, and the next job tries again.
                failed = Array(state.jobs[state.next...])
                state.jobs = []
                state.next = 0
                state.started = false
            }
            guard state.running == 0 else { return ([], failed) }
            defer { state.waiters = [] }
            return (state.waiters, failed)
        }
        for waiter in waiters { waiter.resume() }
        if let failure {
            for job in failed { job.fail(failure) }
        }
    }

    private func work(_ ready: DispatchSemaphore) {
        SystemCalls.nameThread(name)
        let id = SystemCalls.threadID()
        if id >= 0 { state.withLock { $0.threadIDs.append(id) } }
        ready.signal()
        while true {
            wakeUp.wait()
            let (job, ends) = state.withLock { state -> (Job?, Bool) in
                guard state.next < state.jobs.count else { return (nil, state.isShutDown) }
                let job = state.jobs[state.next]
                state.next += 1
                if state.next == state.jobs.count {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.next = 0
                } else if state.next > 1024 {
                    state.jobs.removeFirst(state.next)
                    state.next = 0
                }
                return (job, false)
            }
            // A signal with no job is a thread told to end, or one left by jobs that failed.
            guard let job else {
                if ends { break } else { continue }
            }
            job.run()
        }
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.running -= 1
            guard state.running == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private static func cancelled(_ operation: String) -> BuckiaError {
        BuckiaError(.cancelled, "The \(operation) was cancelled; nothing of it was kept.", operation: operation)
    }
}

/// The key of each ``SharedResources``' ``BlockingPool``.
public enum BlockingPoolKey: SharedResourceKey {
    public static func makeResource() -> BlockingPool { BlockingPool(threads: BlockingPool.defaultThreadCount) }
}

extension SharedResources {
    /// The threads for blocking work of the providers built with these resources, made on
    /// first use and stopped by ``shutdown()``.
    ///
    /// - Throws: ``BuckiaError/Code/cancelled`` after ``shutdown()``.
    public var blockingPool: BlockingPool {
        get throws { try resource(BlockingPoolKey.self) }
    }
}
