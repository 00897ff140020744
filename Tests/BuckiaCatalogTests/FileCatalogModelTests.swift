import BuckiaCatalog
import BuckiaCore
import BuckiaMemory
import BuckiaSync
import Foundation
import Observation
import Testing

/// The app-facing model: sync progress from a run's events, the catalog's files from its live
/// query, both observable.
@MainActor
@Suite("FileCatalogModel", .timeLimit(.minutes(10)))
struct FileCatalogModelTests {
    /// A clock the test moves by hand.
    final class ManualClock: @unchecked Sendable {
        private let now = Locked(Date(timeIntervalSince1970: 1_000_000))
        func read() -> Date { now.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { now.withLock { $0 += seconds } }
    }

    /// Waits until `done(read(model))` holds, woken by Observation at each change (the
    /// suite's time limit fails a test whose model never gets there). On the main actor the
    /// check and the tracking happen together, so no change slips between them.
    /// Cancelled (as the time limit cancels a test), it returns, and the test's expectations
    /// after it fail.
    static func waitUntil<T>(_ model: FileCatalogModel, _ read: @escaping @MainActor (FileCatalogModel) -> T, _ done: (T) -> Bool) async {
        while !Task.isCancelled {
            let resumed = Locked<CheckedContinuation<Bool, Never>?>(nil)
            let resume = { @Sendable (value: Bool) in resumed.withLock { waiting in
                waiting?.resume(returning: value)
                waiting = nil
            } }
            let reached: Bool = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    resumed.withLock { $0 = continuation }
                    var value: T?
                    withObservationTracking { value = read(model) } onChange: { resume(false) }
                    if let value, done(value) { resume(true) }
                    if Task.isCancelled { resume(false) }
                }
            } onCancel: {
                resume(false)
            }
            if reached { return }
        }
        Issue.record("cancelled (the time limit) before the model reached the state waited for")
    }

    @Test("A run's events become counts, bytes, speed, the current file, failures, and its outcome")
    func progressFromEvents() throws {
        let clock = ManualClock()
        let model = FileCatalogModel(clock: clock.read)
        var summary = SyncPlanSummary()
        summary.uploads = 2
        summary.uploadBytes = 300
        summary.remoteDeletes = 1
        model.apply(.listed(local: 3, remote: 1))
        model.apply(.planned(summary))
        #expect(model.syncProgress.isRunning && model.syncProgress.filesPlanned == 3 && model.syncProgress.bytesPlanned == 300)
        let a = try ObjectKey("a.mp4"), b = try ObjectKey("b.mp4"), gone = try ObjectKey("old.mp4")
        model.apply(.started(.upload(a), bytes: 100))
        #expect(model.syncProgress.currentFile == "a.mp4")
        clock.advance(2)
        model.apply(.progress(a, bytes: 60))
        #expect(model.syncProgress.bytesDone == 60 && model.syncProgress.bytesPerSecond == 30)
        model.apply(.finished(.upload(a), bytes: 100))  // the total replaces the progress sum
        #expect(model.syncProgress.bytesDone == 100 && model.syncProgress.filesDone == 1 && model.syncProgress.currentFile == nil)
        // A run that copies as it lists reports its plan again after each batch: the totals
        // change, what is done stays.
        var more = summary
        more.uploads = 3
        model.apply(.planned(more))
        #expect(model.syncProgress.filesPlanned == 4 && model.syncProgress.bytesDone == 100 && model.syncProgress.filesDone == 1)
        model.apply(.planned(summary))
        model.apply(.started(.upload(b), bytes: 200))
        model.apply(.progress(b, bytes: 50))
        model.apply(.failed(.upload(b), BuckiaError(.transient, "the server went away")))
        #expect(model.syncProgress.failures == ["b.mp4: the server went away"])
        model.apply(.finished(.deleteRemote(gone), bytes: 0))
        model.apply(.finished(.record(a), bytes: 0))  // bookkeeping, not a file done
        #expect(model.syncProgress.filesDone == 2)
        #expect(abs(model.syncProgress.fractionCompleted - 150.0 / 300.0) < 1e-9)
        model.apply(.deletesSkipped("an error happened first"))
        #expect(model.syncProgress.notice == "an error happened first")
        var result = SyncResult()
        result.uploaded = 1
        result.bytesUploaded = 100
        result.deletedRemote = 1
        clock.advance(1)
        model.finish(.success(result))
        #expect(!model.syncProgress.isRunning)
        #expect(model.syncProgress.lastResult == SyncOutcome(uploaded: 1, deleted: 1, bytes: 100, finished: clock.read()))
        model.finish(.failure(BuckiaError(.unauthorized, "the key was revoked")))
        #expect(model.syncProgress.lastResult?.error == "the key was revoked" && model.syncProgress.lastResult?.failed == 1)
        // The next run starts from nothing, keeping the last outcome.
        model.apply(.planned(SyncPlanSummary()))
        #expect(model.syncProgress.filesDone == 0 && model.syncProgress.failures.isEmpty && model.syncProgress.lastResult?.error == "the key was revoked")
    }

    @Test("A change to the progress is seen by Observation's tracking, as SwiftUI would see it")
    func observable() {
        let model = FileCatalogModel()
        let fired = Locked(false)
        withObservationTracking { _ = model.syncProgress.filesDone } onChange: { fired.withLock { $0 = true } }
        model.apply(.planned(SyncPlanSummary()))
        #expect(fired.withLock { $0 })
    }

    @Test("A real sync run tracked from start to end: every file counted, the outcome recorded")
    func trackRun() async throws {
        let local = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        let remote = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        for n in 1...3 { _ = try await local.uploadData(Data(repeating: UInt8(n), count: n * 1000), remotePath: "d/\(n).bin") }
        let engine = SyncEngine(
            local: try SyncEndpoint(provider: local, path: "d", backend: "memory:local"),
            remote: try SyncEndpoint(provider: remote, path: "d", backend: "memory:remote"), stateStore: nil)
        let model = FileCatalogModel()
        await model.track(engine.start())
        #expect(model.syncProgress.filesDone == 3 && model.syncProgress.bytesDone == 6000 && model.syncProgress.fractionCompleted == 1)
        #expect(model.syncProgress.lastResult?.uploaded == 3 && model.syncProgress.lastResult?.bytes == 6000)
        #expect(!model.syncProgress.isRunning && model.syncProgress.failures.isEmpty)
    }

    @Test("files follows the catalog's live query until the model stops watching")
    func filesFollowCatalog() async throws {
        let catalog = FileCatalogClient.inMemory()
        let model = FileCatalogModel()
        model.watch(catalog)
        try await catalog.cacheFile(record(1, day: 1))
        await Self.waitUntil(model, { $0.files.map(\.fileId) }) { $0 == ["id-1"] }
        try await catalog.cacheFile(record(2, day: 2))
        await Self.waitUntil(model, { $0.files.map(\.fileId) }) { $0 == ["id-2", "id-1"] }
        model.stopWatching()
        #expect(model.catalogError == nil)
    }

    @Test("A live query that fails is reported on the model")
    func failingCatalog() async {
        let model = FileCatalogModel()
        model.watch(.failing)
        await Self.waitUntil(model, { $0.catalogError }) { $0?.contains("observeFiles was called") == true }
    }
}
