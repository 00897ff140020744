import BuckiaCore
import Foundation

/// Which way a sync moves changes.
public enum SyncMode: String, Sendable, Codable, CaseIterable {
    /// Local → remote: the remote is made to match the local folder.
    case push
    /// Remote → local.
    case pull
    /// Both ways, against the baseline of the last successful run.
    case twoWay = "two-way"
}

/// What happens to a file changed on both sides since the last successful two-way run.
public enum ConflictPolicy: String, Sendable, Codable, CaseIterable {
    /// Both survive: the remote version keeps the name, the local one is renamed with a
    /// conflict suffix naming the side and the time, and both sides end up with both.
    case keepBoth = "keep-both"
    /// The one with the later modification time wins (the remote one on a tie).
    case newerWins = "newer-wins"
    /// The first side's version (the source's: ``SyncEngine/local``) is copied over the
    /// second's.
    case sourceWins = "source-wins"
    /// The second side's version (the destination's: ``SyncEngine/remote``) is copied over the
    /// first's.
    case destinationWins = "destination-wins"

    /// The earlier name of ``sourceWins``.
    @available(*, deprecated, renamed: "sourceWins")
    public static let localWins = ConflictPolicy.sourceWins
    /// The earlier name of ``destinationWins``.
    @available(*, deprecated, renamed: "destinationWins")
    public static let remoteWins = ConflictPolicy.destinationWins
}

/// How two versions of a file are judged equal.
public enum ChangeDetection: Hashable, Sendable {
    /// By this checksum where both versions have it, else as ``sizeAndTime(window:)`` with a
    /// two-second window.
    case checksum(ChecksumAlgorithm)
    /// Same size and modification times no further apart than `window` (filesystems and
    /// object stores keep times at different precisions).
    case sizeAndTime(window: Duration)
    /// Same size.
    case sizeOnly
}

/// What one side knows of one file: enough to decide whether it changed.
public struct SyncEntry: Hashable, Sendable {
    /// The size in bytes.
    public var size: Int64
    /// The modification time, when the side keeps one (for a remote, the source file's time
    /// it recorded, rclone's `mtime`).
    public var modified: Date?
    /// Checksums, lowercase hex.
    public var checksums: [ChecksumAlgorithm: String]
    /// The side's entity tag for this version, if it has one: equal tags on one side mean the
    /// same version (the local provider's names the inode, time and size), so a version the
    /// state store has seen is neither hashed nor asked about again.
    public var etag: String?

    /// Describes one version of a file.
    public init(size: Int64, modified: Date? = nil, checksums: [ChecksumAlgorithm: String] = [:], etag: String? = nil) {
        self.size = size
        self.modified = modified
        self.checksums = checksums
        self.etag = etag
    }

    /// Whether `other` is the same content as this, as `detection` judges it.
    public func matches(_ other: SyncEntry, by detection: ChangeDetection) -> Bool {
        guard size == other.size else { return false }
        switch detection {
        case .sizeOnly:
            return true
        case .checksum(let algorithm):
            if let mine = checksums[algorithm], let theirs = other.checksums[algorithm] { return mine == theirs }
            return matches(other, by: .sizeAndTime(window: .seconds(2)))
        case .sizeAndTime(let window):
            guard let mine = modified, let theirs = other.modified else { return false }
            let apart = abs(mine.timeIntervalSince(theirs))
            return apart <= Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
        }
    }

    /// Whether `other` holds the same bytes as far as a checksum can tell: both carry the
    /// detection's checksum and it is equal. Times and sizes never say so.
    public func matchesByContent(_ other: SyncEntry, by detection: ChangeDetection) -> Bool {
        guard case .checksum(let algorithm) = detection, size == other.size, let mine = checksums[algorithm],
            let theirs = other.checksums[algorithm]
        else { return false }
        return mine == theirs
    }

    /// Whether this is the version `snapshot` recorded on the same side: equal entity tags and
    /// sizes; for a side without tags, equal sizes and times; and for a side that keeps neither
    /// tags nor times, equal sizes and checksums (otherwise nothing could ever show such a file
    /// unchanged, and every run would record it again).
    public func isSameVersion(as snapshot: SyncEntry) -> Bool {
        guard size == snapshot.size else { return false }
        switch (etag, snapshot.etag) {
        case (let mine?, let old?): return mine == old
        case (nil, nil):
            if let modified { return modified == snapshot.modified }
            guard snapshot.modified == nil else { return false }
            let shared = Set(checksums.keys).intersection(snapshot.checksums.keys)
            return !shared.isEmpty && shared.allSatisfy { checksums[$0] == snapshot.checksums[$0] }
        default: return false
        }
    }

    /// Whether this holds what `snapshot` (taken on the same side) held: the same version, or
    /// a new version (a touch) whose checksum, by the algorithm `detection` compares with,
    /// equals the recorded one.
    ///
    /// A time window or the size alone never decides this: a file rewritten with the same
    /// size within a second of the last sync is an edit, and only a checksum can say it is not.
    public func isUnchanged(since snapshot: SyncEntry, by detection: ChangeDetection) -> Bool {
        if isSameVersion(as: snapshot) { return true }
        guard case .checksum(let algorithm) = detection, size == snapshot.size, let mine = checksums[algorithm],
            let old = snapshot.checksums[algorithm]
        else { return false }
        return mine == old
    }
}

/// Both sides of a file as they were when the last successful run left them equal.
public struct SyncBaseline: Hashable, Sendable {
    /// The local version as synced.
    public var local: SyncEntry
    /// The remote version as synced.
    public var remote: SyncEntry

    /// Records both sides of a synced file.
    public init(local: SyncEntry, remote: SyncEntry) {
        self.local = local
        self.remote = remote
    }
}

/// One step of a plan, for one path.
public enum SyncAction: Hashable, Sendable {
    /// Copy the local file to the remote.
    case upload(ObjectKey)
    /// Copy the remote file to the local folder.
    case download(ObjectKey)
    /// Remove the local file.
    case deleteLocal(ObjectKey)
    /// Remove the remote object.
    case deleteRemote(ObjectKey)
    /// Both sides hold the same content: only the baseline needs the entry.
    case record(ObjectKey)
    /// The baseline's entry no longer describes two equal sides (the path is gone from
    /// both, or a one-way run left the destination's copy alone): only the baseline loses it.
    case forget(ObjectKey)
    /// Changed on both sides; `resolution` says what the run does about it.
    case conflict(ObjectKey, ConflictResolution)
    /// A file renamed on the local side: the remote's copy moves from `from` to `to` (natively,
    /// or by a server-side copy and a delete) instead of being sent again and deleted.
    case moveRemote(from: ObjectKey, to: ObjectKey)
    /// A file renamed on the remote side: the local copy moves from `from` to `to`.
    case moveLocal(from: ObjectKey, to: ObjectKey)

    /// The path the action is about (a move's new name).
    public var path: ObjectKey {
        switch self {
        case .upload(let path), .download(let path), .deleteLocal(let path), .deleteRemote(let path), .record(let path),
            .forget(let path), .conflict(let path, _), .moveRemote(_, let path), .moveLocal(_, let path):
            path
        }
    }
}

extension SyncAction: CustomStringConvertible {
    /// The step as a dry run prints it: `upload a/b.txt`, `conflict x keep-both x.conflict-…`.
    public var description: String {
        switch self {
        case .upload(let path): "upload \(path)"
        case .download(let path): "download \(path)"
        case .deleteLocal(let path): "delete-local \(path)"
        case .deleteRemote(let path): "delete-remote \(path)"
        case .record(let path): "record \(path)"
        case .forget(let path): "forget \(path)"
        case .conflict(let path, .upload): "conflict \(path) \(ConflictPolicy.sourceWins.rawValue)"
        case .conflict(let path, .download): "conflict \(path) \(ConflictPolicy.destinationWins.rawValue)"
        case .conflict(let path, .keepBoth(let copy)): "conflict \(path) keep-both \(copy)"
        case .conflict(let path, .unresolved): "conflict \(path) unresolved"
        case .moveRemote(let from, let to): "move-remote \(from) \(to)"
        case .moveLocal(let from, let to): "move-local \(from) \(to)"
        }
    }
}

/// What a run does with a conflict.
public enum ConflictResolution: Hashable, Sendable {
    /// The local version wins: it is uploaded over the remote one.
    case upload
    /// The remote version wins: it is downloaded over the local one.
    case download
    /// Both are kept: the local version is renamed to `localCopy` (on both sides) and the
    /// remote one downloaded under the original name.
    case keepBoth(localCopy: ObjectKey)
    /// Neither version is touched and the run reports the path as failed: keeping both was
    /// asked for, but no conflict copy name fits the key length limit.
    case unresolved
}

/// Decides what a sync does, from what each side holds now and the baseline of the last
/// successful run. Pure: no I/O, so every rule is a table test.
///
/// The rules never lose a version: a file deleted on one side and edited on the other is
/// restored from the edit; a file changed on both sides is a conflict resolved by policy;
/// deletions propagate only with `propagateDeletes` (push and pull) or through the baseline
/// (two-way, where a file the baseline knows and one side lacks was deleted there).
public struct SyncPlanner: Sendable {
    /// Which way changes move.
    public var mode: SyncMode
    /// How versions are compared.
    public var detection: ChangeDetection
    /// What a two-way conflict becomes.
    public var conflicts: ConflictPolicy
    /// Push and pull: remove destination files the source lacks (rclone's `sync` versus `copy`).
    public var propagateDeletes: Bool
    /// Names the local copy kept by ``ConflictPolicy/keepBoth``.
    public var now: @Sendable () -> Date

    /// A planner; the defaults are size and time within two seconds, keep both, no deletes.
    public init(
        mode: SyncMode, detection: ChangeDetection = .sizeAndTime(window: .seconds(2)), conflicts: ConflictPolicy = .keepBoth,
        propagateDeletes: Bool = false, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.mode = mode
        self.detection = detection
        self.conflicts = conflicts
        self.propagateDeletes = propagateDeletes
        self.now = now
    }

    /// The plan, one action per path that needs one, in UTF-8 byte order of the paths.
    public func plan(local: [ObjectKey: SyncEntry], remote: [ObjectKey: SyncEntry], baseline: [ObjectKey: SyncBaseline]) -> [SyncAction] {
        let paths = Set(local.keys).union(remote.keys).union(baseline.keys)
        return paths.sorted().compactMap { path in
            action(for: path, local: local[path], remote: remote[path], baseline: baseline[path])
        }
    }

    /// The one action `path` needs, if any.
    public func action(for path: ObjectKey, local: SyncEntry?, remote: SyncEntry?, baseline: SyncBaseline?) -> SyncAction? {
        switch mode {
        case .push:
            oneWay(path, source: local, destination: remote, baseline: (baseline?.local, baseline?.remote), copy: .upload(path), delete: .deleteRemote(path))
        case .pull:
            oneWay(path, source: remote, destination: local, baseline: (baseline?.remote, baseline?.local), copy: .download(path), delete: .deleteLocal(path))
        case .twoWay:
            twoWay(path, local: local, remote: remote, baseline: baseline)
        }
    }

    private func oneWay(
        _ path: ObjectKey, source: SyncEntry?, destination: SyncEntry?, baseline: (source: SyncEntry?, destination: SyncEntry?),
        copy: SyncAction, delete: SyncAction
    ) -> SyncAction? {
        switch (source, destination) {
        case (let source?, let destination?):
            // Both as the last run left them equal: nothing to copy, and the baseline needs a
            // new entry only if a version changed without its content (a touch).
            if let old = baseline.source, let oldDestination = baseline.destination, source.isUnchanged(since: old, by: detection),
                destination.isUnchanged(since: oldDestination, by: detection)
            {
                return source.isSameVersion(as: old) && destination.isSameVersion(as: oldDestination) ? nil : .record(path)
            }
            // The source changed and the destination did not: only a checksum can show they
            // now hold the same bytes (a same-size rewrite can fall inside a time window).
            if baseline.source != nil, let oldDestination = baseline.destination, destination.isUnchanged(since: oldDestination, by: detection) {
                return source.matchesByContent(destination, by: detection) ? .record(path) : copy
            }
            return source.matches(destination, by: detection) ? .record(path) : copy
        case (.some, nil): return copy
        case (nil, .some):
            if propagateDeletes { return delete }
            // The destination keeps its copy, which the baseline must no longer call synced.
            return baseline.source != nil ? .forget(path) : nil
        case (nil, nil): return baseline.source != nil ? .forget(path) : nil
        }
    }

    private func twoWay(_ path: ObjectKey, local: SyncEntry?, remote: SyncEntry?, baseline: SyncBaseline?) -> SyncAction? {
        let localChanged = changed(local, since: baseline?.local)
        let remoteChanged = changed(remote, since: baseline?.remote)
        switch (local, remote) {
        case (nil, nil):
            return baseline == nil ? nil : .forget(path)
        case (.some, nil):
            // Remote lacks it: deleted there (the baseline knew it) unless the local side
            // changed since, in which case the edit is restored.
            return baseline != nil && !localChanged ? .deleteLocal(path) : .upload(path)
        case (nil, .some):
            return baseline != nil && !remoteChanged ? .deleteRemote(path) : .download(path)
        case (let local?, let remote?):
            if let baseline, !localChanged && !remoteChanged {
                return local.isSameVersion(as: baseline.local) && remote.isSameVersion(as: baseline.remote) ? nil : .record(path)
            }
            // With one side changed since the baseline, only a checksum can show the sides now
            // match; with no baseline, or both changed, the detection's own rule decides.
            let oneSided = baseline != nil && localChanged != remoteChanged
            if oneSided ? local.matchesByContent(remote, by: detection) : local.matches(remote, by: detection) { return .record(path) }
            if localChanged && !remoteChanged && baseline != nil { return .upload(path) }
            if remoteChanged && !localChanged && baseline != nil { return .download(path) }
            // Without a baseline (a first run, a lost store) nobody knows which side changed:
            // whatever the policy, both versions are kept.
            return .conflict(path, resolve(path, local: local, remote: remote, policy: baseline == nil ? .keepBoth : conflicts))
        }
    }

    /// Whether an entry differs from its baseline snapshot (a new file counts as changed).
    private func changed(_ entry: SyncEntry?, since snapshot: SyncEntry?) -> Bool {
        switch (entry, snapshot) {
        case (let entry?, let snapshot?): !entry.isUnchanged(since: snapshot, by: detection)
        case (nil, nil): false
        default: true
        }
    }

    private func resolve(_ path: ObjectKey, local: SyncEntry, remote: SyncEntry, policy: ConflictPolicy) -> ConflictResolution {
        switch policy {
        case .sourceWins: return .upload
        case .destinationWins: return .download
        case .newerWins:
            guard let mine = local.modified, let theirs = remote.modified else { return .download }
            return mine > theirs ? .upload : .download
        case .keepBoth:
            // A name made from a valid key by inserting ASCII before its last dot is valid, but
            // one near the length limit can outgrow it: then neither version is touched.
            guard let copy = ObjectKey(ifValid: Self.conflictName(for: path.rawValue, side: "local", at: now())) else { return .unresolved }
            return .keepBoth(localCopy: copy)
        }
    }

    /// `dir/name.conflict-local-20261123T150405Z.ext`: the side and the time, the extension
    /// kept so the copy still opens with the right application.
    public static func conflictName(for path: String, side: String, at date: Date) -> String {
        let stamp = UTCTimestamp(date).basic
        let slash = path.lastIndex(of: "/")
        let nameStart = slash.map { path.index(after: $0) } ?? path.startIndex
        let name = path[nameStart...]
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return "\(path[..<dot]).conflict-\(side)-\(stamp)\(path[dot...])"
        }
        return "\(path).conflict-\(side)-\(stamp)"
    }
}
