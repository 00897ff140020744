import BuckiaCore
import Foundation

extension SyncEngine {
    /// What one side holds, keyed by path relative to the endpoint.
    struct Listing: Sendable {
        var entries: [ObjectKey: SyncEntry] = [:]
        var unaddressable: [UnaddressableKey] = []
    }

    /// Lists every file under the endpoint that the filter selects. A listing that fails
    /// fails the run before anything changes: half a listing would look like deletes.
    func list(_ endpoint: SyncEndpoint) async throws -> Listing {
        var listing = Listing()
        for try await entry in endpoint.provider.list(ListOptions(prefix: endpoint.prefix)) {
            switch entry {
            case .object(let file):
                guard let relative = file.path.dropping(prefix: endpoint.prefix), let path = try? ObjectKey(relative),
                    options.filter.selects(relative)
                else { continue }
                listing.entries[path] = SyncEntry(size: file.size, modified: file.modificationDate, checksums: file.checksums, etag: file.etag)
            case .unaddressable(let key):
                listing.unaddressable.append(key)
            case .directory:
                continue
            }
        }
        return listing
    }

    /// Gives each entry that is the version the baseline recorded (same entity tag and size)
    /// what the baseline knew of it: checksums and the source's modification time. This is
    /// why an unchanged file is never hashed, nor asked about with a request, again.
    func carryOver(_ entries: inout [ObjectKey: SyncEntry], from baseline: [ObjectKey: SyncBaseline], side: KeyPath<SyncBaseline, SyncEntry>) {
        guard !baseline.isEmpty else { return }
        for (path, entry) in entries {
            guard let snapshot = baseline[path]?[keyPath: side], entry.isSameVersion(as: snapshot) else { continue }
            var filled = entry
            if filled.modified == nil { filled.modified = snapshot.modified }
            filled.checksums.merge(snapshot.checksums) { current, _ in current }
            entries[path] = filled
        }
    }

    /// Fetches what the comparison of a path present on both sides needs and the listings
    /// lacked: a checksum (computed, or read by a stat) or a modification time (a stat). Only
    /// paths of equal size whose versions are not both the baseline's are asked about.
    func fillIn(local localEntries: inout [ObjectKey: SyncEntry], remote remoteEntries: inout [ObjectKey: SyncEntry], baseline: [ObjectKey: SyncBaseline]) async throws {
        let detection = self.detection
        var needs: [Need] = []
        for (path, mine) in localEntries {
            guard let theirs = remoteEntries[path], mine.size == theirs.size else { continue }
            if let old = baseline[path], mine.isSameVersion(as: old.local), theirs.isSameVersion(as: old.remote) { continue }
            switch detection {
            case .sizeOnly:
                continue
            case .checksum(let algorithm):
                let localHas = mine.checksums[algorithm] != nil || offers(local, algorithm)
                let remoteHas = theirs.checksums[algorithm] != nil || offers(remote, algorithm)
                if localHas && remoteHas {
                    if mine.checksums[algorithm] == nil { needs.append(Need(path: path, local: true, what: .checksum(algorithm))) }
                    if theirs.checksums[algorithm] == nil { needs.append(Need(path: path, local: false, what: .checksum(algorithm))) }
                    continue
                }
                fallthrough
            case .sizeAndTime:
                if mine.modified == nil { needs.append(Need(path: path, local: true, what: .time)) }
                if theirs.modified == nil { needs.append(Need(path: path, local: false, what: .time)) }
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
                localEntries[need.path] = merged(localEntries[need.path], learned)
            } else {
                remoteEntries[need.path] = merged(remoteEntries[need.path], learned)
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
    private func merged(_ listed: SyncEntry?, _ learned: SyncEntry) -> SyncEntry? {
        guard var entry = listed else { return nil }
        if learned.size >= 0, learned.etag != nil, learned.etag != entry.etag || learned.size != entry.size { return learned }
        if entry.modified == nil { entry.modified = learned.modified }
        entry.checksums.merge(learned.checksums) { current, _ in current }
        return entry
    }
}
