import BuckiaCore
import Foundation

/// What happened to one file that failed, so a caller can report it and a rerun retries it.
public struct SyncFailure: Sendable, CustomStringConvertible {
    /// The path, relative to the endpoints.
    public var path: ObjectKey
    /// The step that failed.
    public var action: SyncAction
    /// Why.
    public var error: BuckiaError

    public var description: String { "\(path): \(error.message)" }
}

/// Something a running sync reports, in order, for progress displays and logs.
public enum SyncEvent: Sendable {
    /// Both sides are listed: how many files each holds (after the filter). A run that copies
    /// as it lists (one that cannot delete) reports it once the listing ends, after the copies
    /// of every batch but the last.
    case listed(local: Int, remote: Int)
    /// The plan is made: what the run will do. A run that copies as it lists reports the plan
    /// so far after each batch of paths (``SyncEngine/batchSize``) and before copying it; the
    /// last report is the whole plan.
    case planned(SyncPlanSummary)
    /// A step started; `bytes` is what it expects to move.
    case started(SyncAction, bytes: Int64)
    /// Bytes moved for a transfer under way (since the previous event for it).
    case progress(ObjectKey, bytes: Int64)
    /// A step finished, having moved `bytes`.
    case finished(SyncAction, bytes: Int64)
    /// A step failed; the run goes on with the others.
    case failed(SyncAction, BuckiaError)
    /// A file changed on both sides, and what the run does about it.
    case conflict(ObjectKey, ConflictResolution)
    /// The run made no deletes, and why.
    case deletesSkipped(String)
}

/// What a plan will do, counted.
public struct SyncPlanSummary: Hashable, Sendable {
    /// Files to copy to the remote, and their bytes.
    public var uploads = 0, uploadBytes: Int64 = 0
    /// Files to copy to the local side, and their bytes.
    public var downloads = 0, downloadBytes: Int64 = 0
    /// Files to delete on each side.
    public var localDeletes = 0, remoteDeletes = 0
    /// Files renamed on the other side, to move on each side instead of copying them again.
    public var localMoves = 0, remoteMoves = 0
    /// Files changed on both sides.
    public var conflicts = 0
    /// Paths already equal on both sides that need no step.
    public var unchanged = 0

    /// An empty summary.
    public init() {}

    /// Files the plan copies, either way.
    public var transfers: Int { uploads + downloads }
    /// Bytes the plan copies, either way.
    public var bytes: Int64 { uploadBytes + downloadBytes }
}

/// What a sync did.
public struct SyncResult: Sendable {
    /// Every step planned, in path order; with ``SyncOptions/dryRun`` it is all that happened.
    /// Empty when ``SyncOptions/recordsPlan`` is off (``summary`` still counts it).
    public var plan: [SyncAction] = []
    /// The plan, counted.
    public var summary = SyncPlanSummary()
    /// The planned copies whose destination held no file: new files, as opposed to changed
    /// ones (what `buckia check` calls missing). Empty when ``SyncOptions/recordsPlan`` is off.
    public var newFiles: Set<ObjectKey> = []
    /// Files copied to the remote, and their bytes.
    public var uploaded = 0, bytesUploaded: Int64 = 0
    /// Files copied to the local side, and their bytes.
    public var downloaded = 0, bytesDownloaded: Int64 = 0
    /// Files deleted on each side.
    public var deletedLocal = 0, deletedRemote = 0
    /// Files moved on each side: renamed on the other, and moved to the new name instead of
    /// being copied again (``SyncAction/moveLocal(from:to:)``, ``SyncAction/moveRemote(from:to:)``).
    public var movedLocal = 0, movedRemote = 0
    /// Conflicts met (each resolved by policy, or failed).
    public var conflicts = 0
    /// Every file that failed; the others were synced.
    public var failures: [SyncFailure] = []
    /// Why no delete was made, when the plan had some and the run made none.
    public var deletesSkipped: String?
    /// Keys either side holds that no path can name (listed, never touched).
    public var unaddressable: [UnaddressableKey] = []
    /// Why the state store started empty, when it was damaged; the run compared afresh.
    public var stateStoreReset: String?
    /// How long the run took.
    public var duration: Duration = .zero

    /// The seed's name for ``uploaded``.
    public var filesUploaded: Int { uploaded }
    /// The seed's name for ``downloaded``.
    public var filesDownloaded: Int { downloaded }
    /// Whether both sides now hold what the plan meant them to: no failure, no skipped delete.
    public var isComplete: Bool { failures.isEmpty && deletesSkipped == nil }

    /// An empty result: nothing planned, nothing done.
    public init() {}
}
