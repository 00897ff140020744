import Buckia
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaTestSupport
import Foundation
import Testing

/// The layers `BuckiaProviderKit` ships (Layers.swift): a stack of them over a real provider
/// passes every provider scenario, and each does what it says over a ``FaultLayer`` that
/// makes the backend fail on cue. No test waits: the retry's sleep and the clocks are injected.
@Suite("Shipped layers")
struct ShippedLayersTests {
    /// A clock that moves 5 ms each time it is read.
    static func steppingClock() -> @Sendable () -> ContinuousClock.Instant {
        let start = ContinuousClock.now
        let reads = Locked(0)
        return { start + .milliseconds(5 * reads.withLock { $0 += 1; return $0 }) }
    }

    /// A memory provider holding `a.txt`, as `ProviderLayerTests` uses.
    static func memory() async throws -> any StorageProvider { try await ProviderLayerTests.memory() }

    static var a: ObjectKey { get throws { try ObjectKey("a.txt") } }

    @Test("Every provider scenario passes through a stack of the logging, metrics, retry and fault layers over a local folder, the faults absorbed by the retries", arguments: ProviderConformance.scenarios)
    func conformance(_ scenario: ProviderScenario) async throws {
        let root = try TestFolder.make("buckia-layers")
        defer { TestFolder.remove(root) }
        let metrics = ProviderMetrics()
        let lines = Locked(0)
        // The first stat, read, listing and whole upload of each scenario fail once, transiently
        // (async calls: a synchronous one, such as a URL, is not retried).
        let plan = FaultPlan([.init(name: "stat"), .init(name: "readData"), .init(kind: .list), .init(name: "uploadData")])
        try await scenario.check(
            .opening("layers over local") {
                let local = try LocalProvider(root: root, createRoot: false)
                let retried = RetryLayer(FaultLayer(local, plan: plan), maxAttempts: 2, sleep: { _ in })
                return LoggingLayer(MetricsLayer(retried, metrics: metrics), log: { _ in lines.withLock { $0 += 1 } })
            })
        // The read-only layer refuses the writes the scenarios make, so it has tests of its own.
        let calls = metrics.snapshot.values.reduce(0) { $0 + $1.calls }
        #expect(calls == lines.withLock { $0 }, "one line per call the metrics counted")
        #expect(metrics.snapshot.values.allSatisfy { $0.failures <= $0.calls })
        #expect(plan.injected <= 4)
    }

    @Test("The retry layer tries a transient failure again after a jittered, doubling wait, and succeeds")
    func retries() async throws {
        let plan = FaultPlan([.init(name: "stat", times: 2)])
        let waits = Locked<[Duration]>([])
        let layer = RetryLayer(
            FaultLayer(try await Self.memory(), plan: plan), maxAttempts: 3, sleep: { wait in waits.withLock { $0.append(wait) } }, random: { 0.5 })
        #expect(try await layer.stat(remotePath: Self.a)?.size == 4)
        #expect(plan.injected == 2)
        #expect(waits.withLock { $0 } == [.milliseconds(125), .milliseconds(250)])
    }

    @Test("The retry layer gives up after its attempts, and never retries a permanent error or a stream's upload")
    func limits() async throws {
        let base = try await Self.memory()
        let exhausted = FaultPlan([.init(name: "stat", times: 5)])
        let error = await #expect(throws: BuckiaError.self) {
            try await RetryLayer(FaultLayer(base, plan: exhausted), maxAttempts: 3, sleep: { _ in }).stat(remotePath: Self.a)
        }
        #expect(error?.code == .transient)
        #expect(exhausted.injected == 3)

        let permanent = FaultPlan([.init(name: "stat", times: 5, error: BuckiaError(.permissionDenied, "no"))])
        await #expect(throws: BuckiaError.self) { try await RetryLayer(FaultLayer(base, plan: permanent), sleep: { _ in }).stat(remotePath: Self.a) }
        #expect(permanent.injected == 1)

        let streamed = FaultPlan([.init(name: "upload", times: 5)])
        await #expect(throws: BuckiaError.self) {
            try await RetryLayer(FaultLayer(base, plan: streamed), sleep: { _ in })
                .upload(from: .of(Data("new".utf8)), remotePath: Self.a, options: UploadOptions())
        }
        #expect(streamed.injected == 1)
        #expect(try await base.readData(remotePath: Self.a, options: ReadOptions()) == Data("kept".utf8))
    }

    @Test("The wait doubles up to maxDelay, never beyond its ceiling, and is at least what a rate-limited backend asks")
    func waits() async throws {
        let waits = Locked<[Duration]>([])
        let record: @Sendable (Duration) async throws -> Void = { wait in waits.withLock { $0.append(wait) } }
        let plan = FaultPlan([.init(name: "stat", times: 3)])
        let layer = RetryLayer(
            FaultLayer(try await Self.memory(), plan: plan), maxAttempts: 4, baseDelay: .seconds(1), maxDelay: .milliseconds(1500), sleep: record, random: { 2 })
        _ = try await layer.stat(remotePath: Self.a)
        #expect(waits.withLock { $0 } == [.seconds(1), .milliseconds(1500), .milliseconds(1500)])

        waits.withLock { $0.removeAll() }
        let slowDown = BuckiaError(.rateLimited, "Slow down.", retryAfter: .seconds(30))
        let limited = FaultPlan([.init(name: "stat", error: slowDown)])
        _ = try await RetryLayer(FaultLayer(try await Self.memory(), plan: limited), sleep: record, random: { 0 }).stat(remotePath: Self.a)
        #expect(waits.withLock { $0 } == [.seconds(30)])
    }

    /// A provider whose every call fails with what URLSession throws on a timeout.
    struct TimingOut: ForwardingStorageProvider {
        let base: any StorageProvider
        let attempts = Locked(0)
        func admit(_ call: ProviderCall) throws {
            attempts.withLock { $0 += 1 }
            throw URLError(.timedOut)
        }
    }

    @Test("An error of another type is retried when it maps to a retryable one (a timeout), and rethrown as it was")
    func foreignErrors() async throws {
        let timingOut = TimingOut(base: try await Self.memory())
        await #expect(throws: URLError.self) { try await RetryLayer(timingOut, maxAttempts: 3, sleep: { _ in }).stat(remotePath: Self.a) }
        #expect(timingOut.attempts.withLock { $0 } == 3)
    }

    @Test("A cancelled task ends the retries even when the wait itself does not see the cancellation")
    func cancelledTask() async throws {
        let plan = FaultPlan([.init(name: "stat", times: 5)])
        let (stalled, stalls) = AsyncStream.makeStream(of: Void.self)
        let (resume, resumes) = AsyncStream.makeStream(of: Void.self)
        let layer = RetryLayer(FaultLayer(try await Self.memory(), plan: plan), sleep: { _ in
            stalls.yield()
            var iterator = resume.makeAsyncIterator()
            _ = await iterator.next()
        })
        let call = Task { try await layer.stat(remotePath: Self.a) }
        var waiting = stalled.makeAsyncIterator()
        _ = await waiting.next()
        call.cancel()
        resumes.yield()
        let error = await #expect(throws: BuckiaError.self) { try await call.value }
        #expect(error?.code == .cancelled)
        #expect(plan.injected == 1, "no attempt after the cancellation")
    }

    @Test("Only an upload from a stream and a receiveFile read their bytes once", arguments: try ForwardedCall.all())
    func replayable(_ row: ForwardedCall) {
        #expect(row.call.isReplayable == !["upload", "receiveFile"].contains(row.call.name))
    }

    @Test("A fault rule with a key fails only calls that touch it")
    func faultKeys() async throws {
        let base = try await Self.memory()
        try await base.uploadData(Data("b".utf8), remotePath: try ObjectKey("b.txt"), options: UploadOptions())
        let plan = FaultPlan([.init(key: try ObjectKey("b.txt"))])
        let layer = FaultLayer(base, plan: plan)
        #expect(try await layer.stat(remotePath: Self.a) != nil)
        await #expect(throws: BuckiaError.self) { try await layer.stat(remotePath: try ObjectKey("b.txt")) }
        #expect(plan.injected == 1)
    }

    @Test("A retry whose wait is cancelled ends with cancelled")
    func cancelledWait() async throws {
        let plan = FaultPlan([.init(name: "stat", times: 5)])
        let layer = RetryLayer(FaultLayer(try await Self.memory(), plan: plan), sleep: { _ in throw CancellationError() })
        let error = await #expect(throws: BuckiaError.self) { try await layer.stat(remotePath: Self.a) }
        #expect(error?.code == .cancelled)
        #expect(plan.injected == 1)
    }

    @Test("The logging layer writes one line per call, with its outcome and time")
    func logging() async throws {
        let lines = Locked<[String]>([])
        let plan = FaultPlan([.init(name: "deleteFile", error: BuckiaError(.notFound, "It is not there."))])
        let layer = LoggingLayer(FaultLayer(try await Self.memory(), plan: plan), log: { line in lines.withLock { $0.append(line) } }, now: Self.steppingClock())
        _ = try await layer.stat(remotePath: Self.a)
        await #expect(throws: BuckiaError.self) { try await layer.deleteFile(remotePath: Self.a) }
        #expect(lines.withLock { $0 } == [#"stat of "a.txt": ok in 5 ms"#, #"deleteFile of "a.txt": notFound in 5 ms: It is not there."#])
    }

    @Test("The metrics layer counts calls, failures and time by requirement")
    func metrics() async throws {
        let metrics = ProviderMetrics()
        let plan = FaultPlan([.init(name: "stat", times: 1)])
        let layer = MetricsLayer(FaultLayer(try await Self.memory(), plan: plan), metrics: metrics, now: Self.steppingClock())
        await #expect(throws: BuckiaError.self) { try await layer.stat(remotePath: Self.a) }
        for _ in 0..<2 { _ = try await layer.stat(remotePath: Self.a) }
        _ = try await layer.readData(remotePath: Self.a, options: ReadOptions())
        let snapshot = metrics.snapshot
        #expect(snapshot["stat"] == ProviderMetrics.Counts(calls: 3, failures: 1, time: .milliseconds(15)))
        #expect(snapshot["readData"] == ProviderMetrics.Counts(calls: 1, failures: 0, time: .milliseconds(5)))
    }

    @Test("A fault after the call does the work and loses the answer; one before does nothing")
    func faultMoments() async throws {
        let base = try await Self.memory()
        let plan = FaultPlan([.init(kind: .write, key: try Self.a, moment: .after), .init(name: "deleteFile", moment: .before)])
        let layer = FaultLayer(base, plan: plan)
        await #expect(throws: BuckiaError.self) { try await layer.uploadData(Data("new".utf8), remotePath: Self.a, options: UploadOptions()) }
        #expect(try await base.readData(remotePath: Self.a, options: ReadOptions()) == Data("new".utf8), "the upload was done")
        await #expect(throws: BuckiaError.self) { try await layer.deleteFile(remotePath: Self.a) }
        #expect(try await base.stat(remotePath: Self.a) != nil, "the delete was not")
        try await layer.deleteFile(remotePath: Self.a)
        #expect(try await base.stat(remotePath: Self.a) == nil, "each rule fails only as many calls as it says")
        #expect(plan.injected == 2)
    }
}
