import BuckiaCore
import Foundation

/// How a sync runs: which way, how files are compared, what it may delete, and how much it
/// does at once.
public struct SyncOptions: Sendable {
    /// Which way changes move; push (local → remote) by default, as `rclone sync` does.
    public var mode: SyncMode
    /// How two versions are judged equal; nil chooses from both providers' capabilities
    /// (``ChangeDetection/preferred(local:remote:)``).
    public var detection: ChangeDetection?
    /// What a two-way conflict becomes.
    public var conflicts: ConflictPolicy
    /// Push and pull: remove destination files the source lacks (off by default). Two-way runs
    /// always carry deletes across, through the baseline.
    public var deleteExtraneous: Bool
    /// The most deletes a run may make; above it the run makes none (and says so) but does
    /// everything else.
    public var maxDelete: DeleteLimit?
    /// Which paths (relative to the endpoints) take part; the rest are left alone on both sides.
    public var filter: PathFilter
    /// Paths that are uploaded when the remote lacks them and otherwise never touched: never
    /// overwritten, downloaded or deleted.
    public var createOnly: [GlobPattern]
    /// The most transfers, deletes, stats or hashes in flight at once.
    public var maxConcurrentOperations: Int
    /// Plan, report the plan, and change nothing (the state store included).
    public var dryRun: Bool
    /// The local folder `BuckiaClient.sync(options:)` syncs (the seed's `SyncOptions(localPath:)`);
    /// the engine itself takes endpoints and ignores it.
    public var localPath: URL?
    /// The folder of the bucket `BuckiaClient.sync(options:)` syncs with; empty for the whole bucket.
    public var remotePath: String
    /// Paths this run leaves alone on both sides, as ``filter`` leaves out what it does not
    /// select (neither copied nor deleted): what a watch holds back while a program is still
    /// writing it.
    public var heldBack: Set<ObjectKey> = []
    /// Whether the result lists every planned action and new file (``SyncResult/plan``,
    /// ``SyncResult/newFiles``): on by default, and always for a dry run, whose plan is its
    /// result. Off, a run that copies as it lists holds no more for a million files than for
    /// a thousand; `buckia sync` turns it off, since it prints counts.
    public var recordsPlan = true

    /// Options for a sync; every default is the safe one.
    public init(
        mode: SyncMode = .push, detection: ChangeDetection? = nil, conflicts: ConflictPolicy = .keepBoth, deleteExtraneous: Bool = false,
        maxDelete: DeleteLimit? = nil, filter: PathFilter = .all, createOnly: [GlobPattern] = [], maxConcurrentOperations: Int = 8,
        dryRun: Bool = false, localPath: URL? = nil, remotePath: String = ""
    ) {
        self.mode = mode
        self.detection = detection
        self.conflicts = conflicts
        self.deleteExtraneous = deleteExtraneous
        self.maxDelete = maxDelete
        self.filter = filter
        self.createOnly = createOnly
        self.maxConcurrentOperations = maxConcurrentOperations
        self.dryRun = dryRun
        self.localPath = localPath
        self.remotePath = remotePath
    }

    /// Options to sync the folder at `localPath` with the bucket (the seed's spelling).
    public init(localPath: URL, remotePath: String = "", mode: SyncMode = .push) {
        self.init(mode: mode, localPath: localPath, remotePath: remotePath)
    }
}

/// The most deletes one run may make on one side.
public enum DeleteLimit: Hashable, Sendable, CustomStringConvertible {
    /// At most this many files.
    case count(Int)
    /// At most this share (0–100) of the files the side holds.
    case percent(Double)

    /// Parses `N` or `N%`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for anything else.
    public init(parsing text: String) throws {
        if text.hasSuffix("%"), let value = Double(text.dropLast()), value.isFinite, (0...100).contains(value) {
            self = .percent(value)
        } else if let value = Int(text), value >= 0 {
            self = .count(value)
        } else {
            throw BuckiaError(
                .invalidConfiguration, "The delete limit \(text.debugDescription) is not a count (10) or a percentage (10%) from 0 to 100.")
        }
    }

    /// Whether `deletes` out of `total` files stays within the limit.
    public func allows(_ deletes: Int, of total: Int) -> Bool {
        switch self {
        case .count(let limit): deletes <= limit
        case .percent(let share): Double(deletes) <= Double(total) * share / 100
        }
    }

    public var description: String {
        switch self {
        case .count(let limit): "\(limit)"
        case .percent(let share): "\(share)%"
        }
    }
}

extension ChangeDetection {
    /// The comparison two providers allow at the least cost: a checksum both offer, where at
    /// least one side has it without reading the object (S3's MD5, B2's SHA-1, Bunny's
    /// SHA-256, against the local provider, which computes any); else size and modification
    /// time, within the coarser side's precision and at least a second, where both keep times;
    /// else a checksum both compute; else size alone.
    public static func preferred(local: ProviderCapabilities, remote: ProviderCapabilities) -> ChangeDetection {
        let common = Set(local.checksums.keys).intersection(remote.checksums.keys).sorted()
        let cheap = common.filter { min(local.checksums[$0] ?? .read, remote.checksums[$0] ?? .read) < .read }
        if let algorithm = cheap.min(by: { cost($0, local, remote) < cost($1, local, remote) }) { return .checksum(algorithm) }
        if let mine = local.modificationTimePrecision, let theirs = remote.modificationTimePrecision {
            return .sizeAndTime(window: max(.seconds(1), max(mine, theirs)))
        }
        if let algorithm = common.first { return .checksum(algorithm) }
        return .sizeOnly
    }

    private static func cost(_ algorithm: ChecksumAlgorithm, _ local: ProviderCapabilities, _ remote: ProviderCapabilities) -> Int {
        (local.checksums[algorithm]?.rawValue ?? 9) + (remote.checksums[algorithm]?.rawValue ?? 9)
    }
}

extension SyncOptions {
    /// Whether `path` takes part in the run: the filter selects it and it is not held back.
    /// The one test every listed path and stored baseline passes through. An empty held-back
    /// set is not asked (a set hashes the path even to find nothing there).
    /// Whether every path takes part: no filter rule, nothing held back.
    var takesEverything: Bool { filter.includes.isEmpty && filter.excludes.isEmpty && heldBack.isEmpty }

    func takesPart(_ path: ObjectKey) -> Bool {
        filter.selects(path.rawValue) && (heldBack.isEmpty || !heldBack.contains(path))
    }
}
