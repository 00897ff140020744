import BuckiaCore
import Foundation

/// A new file to be created on one side, as the plan's copy of it knows it.
package struct RenameCopy: Sendable {
    /// Where it goes.
    package var path: ObjectKey
    /// The file on the side it is copied from.
    package var source: SyncEntry

    package init(path: ObjectKey, source: SyncEntry) {
        self.path = path
        self.source = source
    }
}

/// A file to be deleted on the side a copy goes to, with what the last run recorded of it.
package struct RenameDelete: Sendable {
    /// Its path.
    package var path: ObjectKey
    /// The file as listed on the side it is deleted from.
    package var doomed: SyncEntry
    /// The baseline's record of the other side's file at this path (the one that was
    /// renamed), and of this side's.
    package var synced: (source: SyncEntry, here: SyncEntry)?

    package init(path: ObjectKey, doomed: SyncEntry, synced: (source: SyncEntry, here: SyncEntry)?) {
        self.path = path
        self.doomed = doomed
        self.synced = synced
    }
}

/// A rename the plan found: the file at `from` on one side holds what the other side now
/// has at `to`.
package struct RenamePair: Hashable, Sendable {
    /// The old name, deleted on the side it moves on.
    package var from: ObjectKey
    /// The new name, copied to that side.
    package var to: ObjectKey
    /// Whether a checksum showed the bytes equal. Otherwise only the size and modification
    /// time pointed at the pair, and the run checks the bytes before it moves anything.
    package var proven: Bool
}

/// What shows two files on one side may hold the same bytes.
private enum RenameIdentity: Hashable {
    /// Equal sizes and an equal checksum: the same bytes.
    case checksum(ChecksumAlgorithm, String, Int64)
    /// Equal sizes and modification times, to the precision the side keeps: a rename keeps
    /// both, but so could other bytes, so a pair found this way is checked before it moves.
    case stamp(Int64, Date)
}

extension SyncPlanner {
    /// The renames among a plan's copies and deletes on one side: each copy of a new file
    /// paired with a delete, on the side it goes to, of a file that holds (or may hold) the
    /// same bytes, so the run moves that file instead of sending the bytes again and deleting
    /// the old name.
    ///
    /// A delete is described by the file it removes and, while that file is still the
    /// version the last run left, by the baseline's record of the other side's file at the old
    /// path (the file that was renamed). A copy is described by its source file. They pair
    /// when they share:
    /// - a checksum by the same algorithm, with equal sizes: proven;
    /// - where no checksum of the copy matches any delete, a size and a modification time: a
    ///   candidate the run must check by checksum before moving (``RenamePair/proven`` false).
    ///
    /// A pair must be unambiguous: a copy pointing at two deletes, or a delete two copies
    /// point at, stays a copy and a delete.
    ///
    /// - Returns: The pairs, in the order of `copies`.
    package static func renames(copies: [RenameCopy], deletes: [RenameDelete]) -> [RenamePair] {
        guard !copies.isEmpty, !deletes.isEmpty else { return [] }
        var byIdentity: [RenameIdentity: Set<Int>] = [:]
        for (index, delete) in deletes.enumerated() {
            var found = Set(delete.doomed.checksums.map { RenameIdentity.checksum($0.key, $0.value, delete.doomed.size) })
            if let (source, here) = delete.synced, delete.doomed.isSameVersion(as: here), source.size == delete.doomed.size {
                // What the last run left is still there: this side holds what the other
                // side's file held then.
                found.formUnion(source.checksums.map { RenameIdentity.checksum($0.key, $0.value, source.size) })
                if let modified = source.modified { found.insert(.stamp(source.size, modified)) }
            }
            for identity in found { byIdentity[identity, default: []].insert(index) }
        }
        var proposals: [(copy: Int, delete: Int, proven: Bool)] = []
        var claims: [Int: Int] = [:]
        for (index, copy) in copies.enumerated() {
            // A checksum that matches decides; size and time only where no checksum matches.
            let byChecksum = copy.source.checksums.reduce(into: Set<Int>()) {
                $0.formUnion(byIdentity[.checksum($1.key, $1.value, copy.source.size)] ?? [])
            }
            let proven = !byChecksum.isEmpty
            var candidates = byChecksum
            if !proven, let modified = copy.source.modified { candidates = byIdentity[.stamp(copy.source.size, modified)] ?? [] }
            guard candidates.count == 1, let delete = candidates.first else { continue }
            proposals.append((index, delete, proven))
            claims[delete, default: 0] += 1
        }
        return proposals.compactMap { proposal in
            guard claims[proposal.delete] == 1 else { return nil }
            return RenamePair(from: deletes[proposal.delete].path, to: copies[proposal.copy].path, proven: proposal.proven)
        }
    }
}
