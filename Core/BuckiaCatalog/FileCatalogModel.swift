import BuckiaCore
import BuckiaSync
import Foundation
import Observation

/// Sync progress as a screen shows it: counts, bytes, speed, the file under way, failures,
/// and how the last run ended.
public struct SyncProgress: Hashable, Sendable {
    /// Whether a run is under way (between its plan and its end).
    public var isRunning = false
    /// Copies and deletes the run planned, and how many finished.
    public var filesPlanned = 0, filesDone = 0
    /// Bytes the run planned to copy, and how many have moved.
    public var bytesPlanned: Int64 = 0, bytesDone: Int64 = 0
    /// Bytes a second since the run's plan was made.
    public var bytesPerSecond: Double = 0
    /// The path of the step that started last and has not finished.
    public var currentFile: String?
    /// `path: message` for each step that failed in this run.
    public var failures: [String] = []
    /// Why the run made no deletes, when it made none it had planned.
    public var notice: String?
    /// How the last run ended; nil until one has.
    public var lastResult: SyncOutcome?

    /// Done so far, from 0 to 1: by bytes when the run copies any, else by files.
    public var fractionCompleted: Double {
        if bytesPlanned > 0 { return min(1, Double(bytesDone) / Double(bytesPlanned)) }
        return filesPlanned > 0 ? min(1, Double(filesDone) / Double(filesPlanned)) : 0
    }

    /// No run yet.
    public init() {}
}

/// How a sync run ended.
public struct SyncOutcome: Hashable, Sendable {
    /// Files copied each way, deleted on either side, and failed.
    public var uploaded = 0, downloaded = 0, deleted = 0, failed = 0
    /// Bytes copied either way.
    public var bytes: Int64 = 0
    /// When it ended.
    public var finished: Date
    /// The error that stopped the run, when one did.
    public var error: String?

    /// An outcome.
    public init(uploaded: Int = 0, downloaded: Int = 0, deleted: Int = 0, failed: Int = 0, bytes: Int64 = 0, finished: Date, error: String? = nil) {
        self.uploaded = uploaded
        self.downloaded = downloaded
        self.deleted = deleted
        self.failed = failed
        self.bytes = bytes
        self.finished = finished
        self.error = error
    }
}

/// The state an app binds its screens to: the catalog's files, kept current by its live
/// query, and the progress of sync runs, fed by their events. Observable with Swift's
/// Observation (`@Observable`), on the main actor, which is where a UI reads it; the lists
/// and events are produced elsewhere and only assigned here.
@MainActor
@Observable
public final class FileCatalogModel {
    /// The catalog's records, newest first, as of its last change.
    public private(set) var files: [FileRecord] = []
    /// The current or last sync run.
    public private(set) var syncProgress = SyncProgress()
    /// The error that ended the catalog's live query, if one did.
    public private(set) var catalogError: String?

    @ObservationIgnored private let clock: @Sendable () -> Date
    @ObservationIgnored private var runStarted: Date?
    @ObservationIgnored private var moved: [ObjectKey: Int64] = [:]
    @ObservationIgnored private var watching: Task<Void, Never>?

    /// A model with nothing in it; `clock` times the transfer speed (inject one in tests).
    public init(clock: @escaping @Sendable () -> Date = { Date() }) {
        self.clock = clock
    }

    /// Keeps ``files`` equal to `catalog`'s records until ``stopWatching()`` or another
    /// `watch`.
    public func watch(_ catalog: FileCatalogClient) {
        watching?.cancel()
        catalogError = nil
        watching = Task { [weak self] in
            do {
                for try await files in catalog.observeFiles() {
                    self?.files = files
                }
            } catch {
                self?.catalogError = (error as? BuckiaError)?.message ?? "\(error)"
            }
        }
    }

    /// Stops following the catalog; ``files`` keeps its last list.
    public func stopWatching() {
        watching?.cancel()
        watching = nil
    }

    /// Follows a run started with `SyncEngine.start()`: its events as they come, then its end.
    public func track(_ run: (events: AsyncStream<SyncEvent>, result: Task<SyncResult, any Error>)) async {
        for await event in run.events { apply(event) }
        do {
            finish(.success(try await run.result.value))
        } catch {
            finish(.failure(error))
        }
    }

    /// Applies one event of a sync run.
    public func apply(_ event: SyncEvent) {
        switch event {
        case .listed:
            break
        case .planned(let summary):
            // A run that copies as it lists reports its plan after each batch, the totals so
            // far: only its first report starts the run's progress afresh.
            if !syncProgress.isRunning {
                var progress = SyncProgress()
                progress.isRunning = true
                progress.lastResult = syncProgress.lastResult
                syncProgress = progress
                runStarted = clock()
                moved = [:]
            }
            syncProgress.filesPlanned = summary.transfers + summary.localDeletes + summary.remoteDeletes
            syncProgress.bytesPlanned = summary.bytes
        case .started(let action, _):
            syncProgress.currentFile = action.path.rawValue
        case .progress(let key, let bytes):
            moved[key, default: 0] += bytes
            syncProgress.bytesDone += bytes
            updateRate()
        case .finished(let action, let bytes):
            // The step's total replaces what its progress events added up to.
            syncProgress.bytesDone += bytes - (moved.removeValue(forKey: action.path) ?? 0)
            if Self.counts(action) { syncProgress.filesDone += 1 }
            if syncProgress.currentFile == action.path.rawValue { syncProgress.currentFile = nil }
            updateRate()
        case .failed(let action, let error):
            moved.removeValue(forKey: action.path)
            syncProgress.failures.append("\(action.path.rawValue): \(error.message)")
            if syncProgress.currentFile == action.path.rawValue { syncProgress.currentFile = nil }
        case .conflict:
            break
        case .deletesSkipped(let reason):
            syncProgress.notice = reason
        }
    }

    /// Records how a run ended.
    public func finish(_ result: Result<SyncResult, any Error>) {
        var outcome = SyncOutcome(finished: clock())
        switch result {
        case .success(let run):
            outcome.uploaded = run.uploaded
            outcome.downloaded = run.downloaded
            outcome.deleted = run.deletedLocal + run.deletedRemote
            outcome.failed = run.failures.count
            outcome.bytes = run.bytesUploaded + run.bytesDownloaded
        case .failure(let error):
            outcome.error = (error as? BuckiaError)?.message ?? "\(error)"
            outcome.failed = syncProgress.failures.count
        }
        syncProgress.isRunning = false
        syncProgress.currentFile = nil
        syncProgress.lastResult = outcome
        runStarted = nil
    }

    private static func counts(_ action: SyncAction) -> Bool {
        switch action {
        case .upload, .download, .deleteLocal, .deleteRemote, .moveLocal, .moveRemote: true
        case .record, .forget, .conflict: false
        }
    }

    private func updateRate() {
        guard let runStarted else { return }
        let elapsed = clock().timeIntervalSince(runStarted)
        syncProgress.bytesPerSecond = elapsed > 0 ? Double(syncProgress.bytesDone) / elapsed : 0
    }
}
