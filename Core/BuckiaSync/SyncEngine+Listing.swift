import BuckiaCore
import Foundation

extension SyncEngine {
    /// What one side holds, in key order, paths relative to the endpoint.
    struct Listing: Sendable {
        var entries: [(path: ObjectKey, entry: SyncEntry)] = []
        var unaddressable: [UnaddressableKey] = []
    }

    /// Where one path is in each of the three lists (-1: absent there).
    struct Row: Sendable {
        var local: Int32
        var remote: Int32
        var baseline: Int32

        func path(_ local: [(path: ObjectKey, entry: SyncEntry)], _ remote: [(path: ObjectKey, entry: SyncEntry)], _ baseline: [(path: ObjectKey, baseline: SyncBaseline)]) -> ObjectKey {
            if self.local >= 0 { return local[Int(self.local)].path }
            if self.remote >= 0 { return remote[Int(self.remote)].path }
            return baseline[Int(self.baseline)].path
        }
    }

    /// Lists every file under the endpoint that the filter selects, whole and sorted: for a
    /// side that lists out of key order (``SideReader`` streams the others). A listing that
    /// fails fails the run before anything changes: half a listing would look like deletes.
    func list(_ endpoint: SyncEndpoint) async throws -> Listing {
        var listing = Listing()
        var sorted = true
        for try await entry in endpoint.provider.list(ListOptions(prefix: endpoint.prefix)) {
            switch SideReader.item(entry, prefix: endpoint.prefix, options: options) {
            case .file(let path, let file):
                if let last = listing.entries.last?.path, !(last < path) { sorted = false }
                listing.entries.append((path, file))
            case .unaddressable(let key):
                listing.unaddressable.append(key)
            case nil:
                continue
            }
        }
        // Providers list in key order; one that does not is sorted here, and duplicates dropped.
        if !sorted {
            listing.entries.sort { $0.path < $1.path }
            var unique: [(path: ObjectKey, entry: SyncEntry)] = []
            for item in listing.entries where unique.last?.path != item.path { unique.append(item) }
            listing.entries = unique
        }
        return listing
    }

    /// Gives each entry that is the version the baseline recorded (same entity tag and size)
    /// what the baseline knew of it: checksums and the source's modification time. This is
    /// why an unchanged file is never hashed, nor asked about with a request, again.
    func carryOver(
        _ rows: [Row], _ local: inout [(path: ObjectKey, entry: SyncEntry)], _ remote: inout [(path: ObjectKey, entry: SyncEntry)],
        _ baseline: [(path: ObjectKey, baseline: SyncBaseline)]
    ) {
        func fill(_ entry: inout SyncEntry, from snapshot: SyncEntry) {
            guard entry.isSameVersion(as: snapshot) else { return }
            if entry.modified == nil, let modified = snapshot.modified { entry.modified = modified }
            for (algorithm, value) in snapshot.checksums where entry.checksums[algorithm] == nil { entry.checksums[algorithm] = value }
        }
        for row in rows where row.baseline >= 0 {
            let old = baseline[Int(row.baseline)].baseline
            if row.local >= 0 { fill(&local[Int(row.local)].entry, from: old.local) }
            if row.remote >= 0 { fill(&remote[Int(row.remote)].entry, from: old.remote) }
        }
    }

    /// Fetches what the comparison of a path present on both sides needs and the listings
    /// lacked: a checksum (computed, or read by a stat) or a modification time (a stat). Only
    /// paths of equal size whose versions are not both the baseline's are asked about.
    func fillIn(
        _ rows: [Row], _ local: inout [(path: ObjectKey, entry: SyncEntry)], _ remote: inout [(path: ObjectKey, entry: SyncEntry)],
        _ baseline: [(path: ObjectKey, baseline: SyncBaseline)]
    ) async throws {
        let detection = self.detection
        var needs: [Need] = []
        var asked = Set<Int>()
        /// Asks for `what` of one side's entry once (`index` on `local` when `isLocal`).
        func need(_ path: ObjectKey, _ index: Int32, local isLocal: Bool, _ what: Need.What) {
            let key = Int(index) * 2 + (isLocal ? 0 : 1)
            guard asked.insert(key).inserted else { return }
            needs.append(Need(path: path, index: Int(index), local: isLocal, what: what))
        }
        for row in rows {
            let path = row.path(local, remote, baseline)
            let mine = row.local >= 0 ? local[Int(row.local)].entry : nil
            let theirs = row.remote >= 0 ? remote[Int(row.remote)].entry : nil
            let old = row.baseline >= 0 ? baseline[Int(row.baseline)].baseline : nil
            // A side whose version changed since its record but kept its size may only have
            // been touched: its checksum, against the recorded one, tells.
            if case .checksum(let algorithm) = detection, let old {
                if let mine, !mine.isSameVersion(as: old.local), mine.size == old.local.size, old.local.checksums[algorithm] != nil,
                    mine.checksums[algorithm] == nil, offers(self.local, algorithm)
                {
                    need(path, row.local, local: true, .checksum(algorithm))
                }
                if let theirs, !theirs.isSameVersion(as: old.remote), theirs.size == old.remote.size, old.remote.checksums[algorithm] != nil,
                    theirs.checksums[algorithm] == nil, offers(self.remote, algorithm)
                {
                    need(path, row.remote, local: false, .checksum(algorithm))
                }
            }
            // Both sides present with equal sizes: compare them with what the detection needs.
            guard let mine, let theirs, mine.size == theirs.size else { continue }
            if let old, mine.isSameVersion(as: old.local) && theirs.isSameVersion(as: old.remote) { continue }
            switch detection {
            case .sizeOnly:
                continue
            case .checksum(let algorithm):
                let localHas = mine.checksums[algorithm] != nil || offers(self.local, algorithm)
                let remoteHas = theirs.checksums[algorithm] != nil || offers(self.remote, algorithm)
                if localHas && remoteHas {
                    if mine.checksums[algorithm] == nil { need(path, row.local, local: true, .checksum(algorithm)) }
                    if theirs.checksums[algorithm] == nil { need(path, row.remote, local: false, .checksum(algorithm)) }
                    continue
                }
                fallthrough
            case .sizeAndTime:
                if mine.modified == nil { need(path, row.local, local: true, .time) }
                if theirs.modified == nil { need(path, row.remote, local: false, .time) }
            }
        }
        guard !needs.isEmpty else { return }
        let found = Locked<[(Need, SyncEntry)]>([])
        try await forEachConcurrently(needs, width: options.maxConcurrentOperations) { need in
            let endpoint = need.local ? self.local : self.remote
            do {
                if let entry = try await self.ask(endpoint, need) { found.withLock { $0.append((need, entry)) } }
            } catch {
                // Left unknown, the path compares as different and its copy reports the error.
                if BuckiaError.wrapping(error).code == .cancelled { throw error }
            }
        }
        for (need, learned) in found.withLock({ $0 }) {
            if need.local {
                local[need.index].entry = merged(local[need.index].entry, learned)
            } else {
                remote[need.index].entry = merged(remote[need.index].entry, learned)
            }
        }
    }

    /// One thing one side must be asked about one path.
    struct Need: Sendable {
        enum What: Sendable {
            case checksum(ChecksumAlgorithm)
            case time
        }
        var path: ObjectKey
        var index: Int
        var local: Bool
        var what: What
    }

    /// Whether asking the endpoint can bring a checksum its listing did not carry.
    private func offers(_ endpoint: SyncEndpoint, _ algorithm: ChecksumAlgorithm) -> Bool {
        endpoint.provider.capabilities.checksums[algorithm].map { $0 != .listing } ?? false
    }

    /// Asks the endpoint the cheapest way: computing a checksum the provider only has by
    /// reading, else a stat (which brings the time and the checksums a stat knows).
    private func ask(_ endpoint: SyncEndpoint, _ need: Need) async throws -> SyncEntry? {
        let key = try endpoint.key(need.path)
        if case .checksum(let algorithm) = need.what, endpoint.provider.capabilities.checksums[algorithm] == .read {
            guard let value = try await endpoint.provider.checksum(remotePath: key, algorithm: algorithm) else { return nil }
            return SyncEntry(size: -1, checksums: [algorithm: value])
        }
        guard let file = try await endpoint.provider.stat(remotePath: key) else { return nil }
        return SyncEntry(size: file.size, modified: file.effectiveModificationDate, checksums: file.checksums, etag: file.etag)
    }

    /// The listed entry with what was learned: a stat of another version replaces it whole.
    private func merged(_ listed: SyncEntry, _ learned: SyncEntry) -> SyncEntry {
        var entry = listed
        if learned.size >= 0, learned.etag != nil, learned.etag != entry.etag || learned.size != entry.size { return learned }
        if entry.modified == nil { entry.modified = learned.modified }
        entry.checksums.merge(learned.checksums) { current, _ in current }
        return entry
    }
}
