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

    /// Paths each side holds under keys it cannot address (relative to the endpoint).
    struct Hidden: Sendable {
        var local: Set<String> = []
        var remote: Set<String> = []

        /// Whether a side the row is missing from may hold the path unseen: the path, or a
        /// folder above it, is one of that side's unaddressable keys.
        func hides(_ row: Row, _ path: ObjectKey) -> Bool {
            if row.local < 0 && !local.isEmpty && Self.covers(local, path) { return true }
            if row.remote < 0 && !remote.isEmpty && Self.covers(remote, path) { return true }
            return false
        }

        private static func covers(_ keys: Set<String>, _ path: ObjectKey) -> Bool {
            var prefix = path.rawValue[...]
            while true {
                if keys.contains(String(prefix)) { return true }
                guard let slash = prefix.lastIndex(of: "/") else { return false }
                prefix = prefix[..<slash]
            }
        }

        /// The unaddressable keys of a listing, relative to the endpoint's folder.
        static func relative(_ keys: [UnaddressableKey], prefix: String) -> Set<String> {
            Set(keys.compactMap { key in
                var bytes = key.bytes
                while bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
                guard bytes.starts(with: prefix.utf8) else { return nil }
                return String(decoding: bytes.dropFirst(prefix.utf8.count), as: UTF8.self)
            })
        }
    }

    /// Lists every file under the endpoint that the filter selects, in key order. A listing
    /// that fails fails the run before anything changes: half a listing would look like deletes.
    func list(_ endpoint: SyncEndpoint) async throws -> Listing {
        var listing = Listing()
        var sorted = true
        for try await entry in endpoint.provider.list(ListOptions(prefix: endpoint.prefix)) {
            switch entry {
            case .object(let file):
                guard let relative = file.path.dropping(prefix: endpoint.prefix) else { continue }
                guard let path = try? ObjectKey(relative) else {
                    // The folder's own marker (`prefix/`) and the like: held, but not a path.
                    listing.unaddressable.append(UnaddressableKey(bytes: Array(file.path.rawValue.utf8), reason: "it names no file inside the synced folder"))
                    continue
                }
                guard options.filter.selects(relative) else { continue }
                if let last = listing.entries.last?.path, !(last < path) { sorted = false }
                listing.entries.append(
                    (path, SyncEntry(size: file.size, modified: file.modificationDate, checksums: file.checksums, etag: file.etag)))
            case .unaddressable(let key):
                listing.unaddressable.append(key)
            case .directory:
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

    /// Lines up the two listings and the baseline (all in key order): one row per path that
    /// needs planning, with its index in each list. A path both of whose sides are still the
    /// versions the baseline recorded needs nothing and gets no row; the baseline is read as a
    /// stream and only the entries rows need are kept (`retained`), so a resync of many
    /// unchanged files holds none of their baselines in memory.
    ///
    /// Baselines of paths the filter leaves out are skipped (they stay in the store), and so is
    /// every path a side cannot show because a key it cannot address stands there or above it
    /// (a folder replaced by a symbolic link): what cannot be seen is unknown, not deleted.
    static func merge(
        _ local: [(path: ObjectKey, entry: SyncEntry)], _ remote: [(path: ObjectKey, entry: SyncEntry)],
        selects: @escaping (ObjectKey) -> Bool = { _ in true }, hidden: Hidden = Hidden(),
        baseline forEachBaseline: ((ObjectKey, SyncBaseline) throws -> Void) throws -> Void
    ) throws -> (rows: [Row], retained: [(path: ObjectKey, baseline: SyncBaseline)], unchanged: Int) {
        var rows: [Row] = []
        var retained: [(path: ObjectKey, baseline: SyncBaseline)] = []
        var unchanged = 0
        var (i, j) = (0, 0)
        /// The row for `path`, taking the listings' entries for it.
        func take(_ path: ObjectKey) -> Row {
            var row = Row(local: -1, remote: -1, baseline: -1)
            if i < local.count, local[i].path == path {
                row.local = Int32(i)
                i += 1
            }
            if j < remote.count, remote[j].path == path {
                row.remote = Int32(j)
                j += 1
            }
            return row
        }
        /// Emits rows for listed paths before `limit` (all of them when nil).
        func drain(before limit: ObjectKey?) {
            while i < local.count || j < remote.count {
                var next: ObjectKey?
                if i < local.count { next = local[i].path }
                if j < remote.count, next.map({ remote[j].path < $0 }) ?? true { next = remote[j].path }
                guard let path = next, limit.map({ path < $0 }) ?? true else { return }
                let row = take(path)
                if hidden.hides(row, path) { continue }
                rows.append(row)
            }
        }
        var previous: ObjectKey?
        try forEachBaseline { path, old in
            // The store returns keys in order; a repeated or backwards key is skipped.
            if let previous, !(previous < path) { return }
            previous = path
            drain(before: path)
            guard selects(path) else { return }
            var row = take(path)
            if row.local >= 0, row.remote >= 0, local[Int(row.local)].entry.isSameVersion(as: old.local),
                remote[Int(row.remote)].entry.isSameVersion(as: old.remote)
            {
                unchanged += 1
                return
            }
            if hidden.hides(row, path) { return }
            row.baseline = Int32(retained.count)
            retained.append((path, old))
            rows.append(row)
        }
        drain(before: nil)
        return (rows, retained, unchanged)
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
