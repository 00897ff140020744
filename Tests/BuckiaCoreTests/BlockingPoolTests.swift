import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// The blocking-work pool's lifetime: its jobs run on its own threads, a shutdown lets the
/// queued ones finish and refuses the rest, and when it returns every thread has ended.
@Suite("The blocking-work pool")
struct BlockingPoolTests {
    /// Whether this build can name the kernel's threads (the portable build cannot).
    static let seesThreads = SystemCalls.threadID() >= 0

    /// Jobs that block until the test opens their gate, saying when each starts.
    final class GatedJobs: Sendable {
        let gate = DispatchSemaphore(value: 0)
        let started: AsyncStream<Int>
        private let startedSink: AsyncStream<Int>.Continuation

        init() { (started, startedSink) = AsyncStream.makeStream() }

        func job(_ value: Int) -> @Sendable () -> Int {
            { [self] in
                startedSink.yield(value)
                gate.wait()
                return value * 10
            }
        }

        func open(_ count: Int) { for _ in 0..<count { gate.signal() } }
    }

    @Test("A job runs on one of the pool's threads, named as the pool is", .enabled(if: seesThreads))
    func runsOnItsThreads() async throws {
        let pool = BlockingPool(threads: 2, name: "buckia-t-run")
        let id = try await pool.run("ask the thread") { SystemCalls.threadID() }
        #expect(id != SystemCalls.threadID())
        #expect(pool.threadIDs.count == 2)
        #expect(pool.threadIDs.contains(id))
        #expect(Threads.name(id) == "buckia-t-run")
        await pool.shutdown()
    }

    @Test("Shutdown runs the queued jobs, refuses new ones, and returns when every thread has ended")
    func shutdownIsGraceful() async throws {
        let pool = BlockingPool(threads: 2, name: "buckia-t-end")
        let jobs = GatedJobs()
        let results = (0..<5).map { value in
            Task { try await pool.run("job \(value)", jobs.job(value)) }
        }
        // Two run and block; three wait in the queue.
        var running = jobs.started.makeAsyncIterator()
        _ = await running.next()
        _ = await running.next()
        let threads = pool.threadIDs
        if Self.seesThreads {
            #expect(threads.count == 2)
            #expect(threads.allSatisfy { !Threads.ended($0) })
        }

        let shutdown = Task { await pool.shutdown() }
        // Refused once the shutdown has begun (observed, not waited for).
        while !pool.isShutDown { await Task.yield() }
        let refused = await #expect(throws: BuckiaError.self) { try await pool.run("late job", jobs.job(100)) }
        #expect(refused?.code == .cancelled)
        #expect(refused?.message.contains("shut down") == true)

        jobs.open(5)
        for (value, result) in results.enumerated() {
            #expect(try await result.value == value * 10, "queued job \(value) ran to its end")
        }
        await shutdown.value
        for id in threads {
            #expect(Threads.ended(id), "thread \(id) of the pool ended")
        }
        #expect(pool.threadIDs == threads)
    }

    @Test("A second shutdown returns only once the first has joined every thread")
    func secondShutdownWaitsForTheJoin() async throws {
        let pool = BlockingPool(threads: 2, name: "buckia-t-two")
        _ = try await pool.run("start the threads") { 1 }
        let (events, sink) = AsyncStream<String>.makeStream()
        let joinGate = DispatchSemaphore(value: 0)
        pool.observeShutdown { step in
            switch step {
            case .joining:
                sink.yield("first joining")
                joinGate.wait()
            case .waitingForEnd:
                sink.yield("second waiting")
            }
        }
        var seen = events.makeAsyncIterator()
        let first = Task {
            await pool.shutdown()
            sink.yield("first returned")
        }
        #expect(await seen.next() == "first joining")
        let second = Task {
            await pool.shutdown()
            sink.yield("second returned")
        }
        // Held before its join, the first has not ended the pool: the second must wait.
        #expect(await seen.next() == "second waiting")
        joinGate.signal()
        await first.value
        await second.value
        sink.finish()
        var rest: [String] = []
        while let event = await seen.next() { rest.append(event) }
        #expect(Set(rest) == ["first returned", "second returned"])
    }

    @Test("A job whose task is cancelled before it starts never runs")
    func cancelledBeforeStart() async throws {
        let pool = BlockingPool(threads: 1, name: "buckia-t-cnl")
        let jobs = GatedJobs()
        let first = Task { try await pool.run("first", jobs.job(1)) }
        var started = jobs.started.makeAsyncIterator()
        #expect(await started.next() == 1)
        let ran = Locked(false)
        let second = Task {
            try await pool.run("second") { ran.withLock { $0 = true } }
        }
        second.cancel()
        jobs.open(1)
        #expect(try await first.value == 10)
        let error = await #expect(throws: BuckiaError.self) { try await second.value }
        #expect(error?.code == .cancelled)
        await pool.shutdown()
        #expect(!ran.withLock { $0 }, "the cancelled job's body did not run")
    }

    @Test("A pool that never ran a job starts no thread, and shuts down at once")
    func idlePool() async {
        let pool = BlockingPool(threads: 4, name: "buckia-t-idle")
        await pool.shutdown()
        #expect(pool.threadIDs.isEmpty)
        let error = await #expect(throws: BuckiaError.self) { try await pool.run("after") { 1 } }
        #expect(error?.code == .cancelled)
    }

    @Test("Shutting SharedResources down ends its pool's threads; a provider's work then fails, saying why", .enabled(if: seesThreads))
    func sharedResourcesOwnThePool() async throws {
        let resources = SharedResources()
        let pool = try resources.blockingPool
        #expect(try resources.blockingPool === pool, "one pool per resources")
        _ = try await pool.run("warm up") { 1 }
        let threads = resources.threadIDs
        #expect(threads.count == BlockingPool.defaultThreadCount)
        #expect(threads.allSatisfy { Threads.name($0) == "buckia-io" })
        await resources.shutdown()
        for id in threads {
            #expect(Threads.ended(id), "thread \(id) ended with the resources")
        }
        #expect(throws: BuckiaError.self) { _ = try resources.blockingPool }
    }
}
