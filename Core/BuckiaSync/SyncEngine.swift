import BuckiaCore
import Foundation

/// Makes two endpoints agree: a local folder and a bucket, or two buckets. Written once over
/// ``BuckiaCore/StorageProvider``, so every provider, built-in or third-party, syncs.
///
/// A run lists both sides, fills in what the comparison needs (from the state store first,
/// so an unchanged file is neither rehashed nor asked about), plans with ``SyncPlanner``, then
/// copies with bounded concurrency. Deletes come last, and only when every copy succeeded and
/// the delete limit allows them.
///
/// ```swift
/// let engine = SyncEngine(local: folder, remote: bucket, options: SyncOptions(mode: .twoWay), stateStore: store)
/// let result = try await engine.run { event in print(event) }
/// ```
///
/// Safety: every write is atomic at the destination and conditional where the provider can
/// check a condition (a file replaced is the version compared, a file created was absent),
/// so a file edited during the run is not overwritten; a failed file never stops the others;
/// the state store records each file as it completes, so a rerun after a kill or a failure
/// redoes only what is left.
public struct SyncEngine: Sendable {
    /// The first side: the source of a push.
    public let local: SyncEndpoint
    /// The second side: the destination of a push.
    public let remote: SyncEndpoint
    /// How the run behaves.
    public let options: SyncOptions
    /// What earlier runs left; nil to compare everything afresh and remember nothing.
    public let stateStore: SyncStateStore?
    /// The clock that names conflict copies.
    let now: @Sendable () -> Date

    /// A sync between `local` and `remote`.
    public init(
        local: SyncEndpoint, remote: SyncEndpoint, options: SyncOptions = SyncOptions(), stateStore: SyncStateStore?,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.local = local
        self.remote = remote
        self.options = options
        self.stateStore = stateStore
        self.now = now
    }

    /// The comparison this run uses: the options' choice, else what both providers allow.
    public var detection: ChangeDetection {
        options.detection ?? .preferred(local: local.provider.capabilities, remote: remote.provider.capabilities)
    }

    /// Starts the run in a task of its own: its events arrive on the stream, which finishes
    /// when the run does.
    public func start() -> (events: AsyncStream<SyncEvent>, result: Task<SyncResult, any Error>) {
        let (events, continuation) = AsyncStream.makeStream(of: SyncEvent.self, bufferingPolicy: .unbounded)
        let task = Task {
            defer { continuation.finish() }
            return try await run { continuation.yield($0) }
        }
        return (events, task)
    }

    /// Runs the sync, reporting each step to `events`.
    ///
    /// A run that cannot delete (a push or pull without ``SyncOptions/deleteExtraneous``, a
    /// two-way run with no baseline yet: every first sync) copies as it lists, a batch of
    /// ``batchSize`` paths at a time, so its memory is a batch's, not the tree's; it reports
    /// ``SyncEvent/planned(_:)`` after each batch with the plan so far. A run that can delete
    /// plans every path before it copies one: a delete and a copy far apart in the listing
    /// may be one rename, which moves instead.
    ///
    /// - Returns: What was done, with every file that failed; a failed file is not an error.
    /// - Throws: When a side cannot be listed (nothing is changed then, unless the run copies
    ///   as it lists: then what completed is recorded), when the state store cannot be written,
    ///   and ``BuckiaCore/BuckiaError/Code/cancelled`` when the task is cancelled (what
    ///   completed is recorded).
    public func run(events: @escaping @Sendable (SyncEvent) -> Void = { _ in }) async throws -> SyncResult {
        try local.requireApart(from: remote)
        let started = ContinuousClock.now
        var result = SyncResult()

        // Both sides are listed at once and merged as they arrive, with the baseline: only
        // the entries of paths that need planning are kept (a few dozen bytes a path beyond
        // them). A side that lists out of key order is listed again, whole, and sorted.
        // No filter rule and nothing held back: no path is asked about (nor made a key for it).
        let selects: ((ObjectKey) -> Bool)? = options.takesEverything ? nil : { [options] (path: ObjectKey) in options.takesPart(path) }
        let baselines = { [stateStore] (after: String?) in try stateStore?.baselinePage(after: after, limit: 1_000) }
        let canDelete =
            switch options.mode {
            case .push, .pull: options.deleteExtraneous
            case .twoWay: try stateStore?.baselines(after: nil, limit: 1).last != nil
            }
        let streamed = !options.dryRun && !canDelete
        let records = options.recordsPlan || options.dryRun
        let planner = SyncPlanner(
            mode: options.mode, detection: detection, conflicts: options.conflicts, propagateDeletes: options.deleteExtraneous, now: now)
        let run = SyncExecution(engine: self, events: events)
        var tally = Tally()
        var held: [SyncStep] = []
        /// Copies a planned batch now (a run that copies as it lists); its deletes wait.
        func perform(_ batch: inout Merged) async throws {
            var planned = try await plan(&batch, planner: planner, tally: &tally, result: &result, records: records)
            if records { result.plan += planned.map(\.action) }
            summarize(planned, into: &result.summary)
            result.summary.unchanged = tally.unchanged
            events(.planned(result.summary))
            held += planned.filter(\.action.isDelete)
            planned.removeAll(where: \.action.isDelete)
            try await run.perform(consume planned)
        }

        let batch = streamed ? Self.batchSize : nil
        var sides = (local: SideReader(streaming: local, options: options), remote: SideReader(streaming: remote, options: options))
        var merged: Merged
        do {
            do {
                merged = try await Self.merge(sides.local, sides.remote, selects: selects, baselines: baselines, batch: batch) {
                    try await perform(&$0)
                }
            } catch is SideReader.OutOfOrder {
                sides.local.cancel()
                sides.remote.cancel()
                async let localListing = list(local)
                async let remoteListing = list(remote)
                let (localFiles, remoteFiles) = try await (localListing, remoteListing)
                sides = (SideReader(sorted: localFiles, prefix: local.prefix), SideReader(sorted: remoteFiles, prefix: remote.prefix))
                merged = try await Self.merge(sides.local, sides.remote, selects: selects, baselines: baselines, batch: batch) {
                    try await perform(&$0)
                }
            }
        } catch {
            // Batches a streamed run copied are kept (recorded); a run that had not started
            // copying has nothing to keep.
            try await stop(run, after: error)
        }
        let listed = (local: sides.local.count, remote: sides.remote.count)
        result.unaddressable = sides.local.unaddressable + sides.remote.unaddressable
        events(.listed(local: listed.local, remote: listed.remote))
        var steps: [SyncStep] = []
        do {
            if streamed {
                try await perform(&merged)
                steps = held
            } else {
                steps = try await plan(&merged, planner: planner, tally: &tally, result: &result, records: records)
                try await pairRenames(&steps)
                if records { result.plan = steps.map(\.action) }
                summarize(steps, into: &result.summary)
                result.summary.unchanged = tally.unchanged
                events(.planned(result.summary))
                if options.dryRun {
                    result.stateStoreReset = stateStore?.wasReset
                    result.duration = ContinuousClock.now - started
                    return result
                }
            }
        } catch {
            try await stop(run, after: error)
        }

        // The steps are the run's largest structure (a few hundred bytes a file): split in
        // place and handed over, never copied.
        let deletes = steps.filter(\.action.isDelete)
        steps.removeAll(where: \.action.isDelete)
        do {
            try await run.perform(consume steps)
            if !deletes.isEmpty {
                // A side that lists nothing is more often missing (an unmounted disk, a mistyped
                // folder) than emptied on purpose: the side a push or pull reads from, or in
                // two-way a side where the last run left files.
                let emptied: String?
                switch options.mode {
                case .push: emptied = listed.local == 0 ? "local" : nil
                case .pull: emptied = listed.remote == 0 ? "remote" : nil
                case .twoWay:
                    emptied = tally.baselineRows == 0 && tally.sameAsBaseline == 0 ? nil : listed.local == 0 ? "local" : listed.remote == 0 ? "remote" : nil
                }
                if let reason = deleteRefusal(
                    deletes.map(\.action), local: listed.local, remote: listed.remote, failures: run.failureCount,
                    emptied: emptied)
                {
                    run.skipDeletes(reason)
                    // A rename's new name is still copied; the old one stays, as deletes do.
                    try await run.perform(deletes.compactMap(\.asCopy))
                } else {
                    try await run.perform(deletes)
                }
            }
        } catch {
            try await stop(run, after: error)
        }
        try await run.flushOffPool()
        try removeWorkingFiles()
        run.collect(into: &result)
        // Read last: damage met during the run resets the store then.
        result.stateStoreReset = stateStore?.wasReset
        result.duration = ContinuousClock.now - started
        return result
    }

    /// Paths a run that copies as it lists plans and copies at a time.
    public static let batchSize = 2_048

    /// Counts kept across a run's batches.
    private struct Tally {
        /// Paths with both sides as planned (unchanged, recorded or forgotten).
        var unchanged = 0
        /// Paths both of whose sides are still the versions the baseline recorded.
        var sameAsBaseline = 0
        /// Planned paths the baseline knew.
        var baselineRows = 0
    }

    /// Plans the rows of `merged` (which is emptied): carries the baseline's checksums over,
    /// fills in what the comparison lacks, and returns the steps, counting unchanged paths
    /// into `tally` and, when it `records`, new files into `result`.
    private func plan(
        _ merged: inout Merged, planner: SyncPlanner, tally: inout Tally, result: inout SyncResult, records: Bool
    ) async throws -> [SyncStep] {
        let (rows, baseline) = (merged.rows, merged.baseline)
        var localFiles = Listing(entries: merged.local)
        var remoteFiles = Listing(entries: merged.remote)
        tally.sameAsBaseline += merged.unchanged
        tally.unchanged += merged.unchanged
        tally.baselineRows += baseline.count
        merged = Merged()
        carryOver(rows, &localFiles.entries, &remoteFiles.entries, baseline)
        try await fillIn(rows, &localFiles.entries, &remoteFiles.entries, baseline)
        var steps: [SyncStep] = []
        for row in rows {
            let path = row.path(localFiles.entries, remoteFiles.entries, baseline)
            let mine = row.local >= 0 ? localFiles.entries[Int(row.local)].entry : nil
            let theirs = row.remote >= 0 ? remoteFiles.entries[Int(row.remote)].entry : nil
            let old = row.baseline >= 0 ? baseline[Int(row.baseline)].baseline : nil
            guard let action = planner.action(for: path, local: mine, remote: theirs, baseline: old), allowed(action, remote: theirs) else {
                if mine != nil || theirs != nil { tally.unchanged += 1 }
                continue
            }
            steps.append(SyncStep(action: action, local: mine, remote: theirs, baseline: old))
            switch action {
            case .upload where theirs == nil, .download where mine == nil: if records { result.newFiles.insert(path) }
            case .record, .forget: if mine != nil || theirs != nil { tally.unchanged += 1 }
            default: break
            }
        }
        return steps
    }

    /// Ends a run that failed with `error` (cancelled, a side that could not be listed, a
    /// state store that could not be written): keeps what completed, tidies, and throws the
    /// error, with what else failed on the way said in it (the folder may keep Buckia's files).
    private func stop(_ run: SyncExecution, after error: any Error) async throws -> Never {
        var also: [String] = []
        do {
            // Here, not on the blocking-work threads: a cancelled task could not start the job.
            try run.flush()
        } catch let recording {
            also.append("What completed could not be recorded either: \(BuckiaError.wrapping(recording).message)")
        }
        do {
            try removeWorkingFiles()
        } catch let tidying {
            also.append("Buckia's working files could not be removed either: \(BuckiaError.wrapping(tidying).message)")
        }
        guard !also.isEmpty else { throw error }
        var stated = BuckiaError.wrapping(error)
        stated.message += " " + also.joined(separator: " ")
        throw stated
    }

    /// Removes each side's working files (``BuckiaCore/StorageProvider/removeWorkingFiles()``),
    /// so a sync into a user's folder leaves nothing of Buckia's there.
    private func removeWorkingFiles() throws {
        try local.provider.removeWorkingFiles()
        try remote.provider.removeWorkingFiles()
    }

    /// Create-only paths are uploaded when the remote lacks them, and otherwise left alone.
    private func allowed(_ action: SyncAction, remote: SyncEntry?) -> Bool {
        guard options.createOnly.contains(where: { $0.matches(action.path.rawValue) }) else { return true }
        switch action {
        case .upload: return remote == nil
        case .record, .forget: return true
        default: return false
        }
    }

    /// Why the plan's deletes must not run, if they must not.
    private func deleteRefusal(_ deletes: [SyncAction], local: Int, remote: Int, failures: Int, emptied: String?) -> String? {
        if failures > 0 {
            return "\(failures) file\(failures == 1 ? "" : "s") failed, so no file was deleted; fix the failures and sync again."
        }
        guard let limit = options.maxDelete else {
            // A side that lists nothing where the last run left files is more often missing (an
            // unmounted disk, a mistyped path) than emptied on purpose.
            if let emptied {
                return "The \(emptied) side lists no file, so its \(deletes.count) deletes were not carried across (is it the right folder?). If emptying the other side is intended, sync again with a delete limit (100%)."
            }
            return nil
        }
        // A move removes its old name: it counts as a delete on the side it moves on.
        let localDeletes = deletes.filter {
            switch $0 {
            case .deleteLocal, .moveLocal: true
            default: false
            }
        }.count
        let remoteDeletes = deletes.count - localDeletes
        if !limit.allows(localDeletes, of: local) || !limit.allows(remoteDeletes, of: remote) {
            return "The plan deletes \(localDeletes) local and \(remoteDeletes) remote files, over the limit of \(limit); nothing was deleted. Check the plan with a dry run, then raise the limit."
        }
        return nil
    }

    /// Adds `steps` to `summary`.
    private func summarize(_ steps: [SyncStep], into summary: inout SyncPlanSummary) {
        for step in steps {
            func upload() {
                summary.uploads += 1
                summary.uploadBytes = summary.uploadBytes.addingSaturated(step.local?.size ?? 0)
            }
            func download() {
                summary.downloads += 1
                summary.downloadBytes = summary.downloadBytes.addingSaturated(step.remote?.size ?? 0)
            }
            switch step.action {
            case .upload: upload()
            case .download: download()
            case .deleteLocal: summary.localDeletes += 1
            case .deleteRemote: summary.remoteDeletes += 1
            case .moveRemote: summary.remoteMoves += 1
            case .moveLocal: summary.localMoves += 1
            case .conflict(_, let resolution):
                summary.conflicts += 1
                switch resolution {
                case .upload: upload()
                case .download: download()
                case .keepBoth:
                    upload()
                    download()
                case .unresolved: break
                }
            case .record, .forget: break
            }
        }
    }
}

/// One step of a run, with both sides' entries as planned.
struct SyncStep: Sendable {
    var action: SyncAction
    var local: SyncEntry?
    var remote: SyncEntry?
    /// What the last run left at the path (read by rename detection).
    var baseline: SyncBaseline?
}

extension SyncAction {
    /// Whether the step removes a file (a move removes its old name): such steps run last,
    /// and only when the guards on deletes allow.
    var isDelete: Bool {
        switch self {
        case .deleteLocal, .deleteRemote, .moveLocal, .moveRemote: true
        default: false
        }
    }
}

extension SyncStep {
    /// A move as the copy it replaced, for a run whose deletes are refused; nil for a delete.
    var asCopy: SyncStep? {
        switch action {
        case .moveRemote(_, let to): SyncStep(action: .upload(to), local: local, remote: nil)
        case .moveLocal(_, let to): SyncStep(action: .download(to), local: nil, remote: remote)
        default: nil
        }
    }
}
