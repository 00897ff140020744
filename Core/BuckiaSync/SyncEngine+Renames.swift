import BuckiaCore
import Foundation

extension SyncEngine {
    /// The plan with each rename the run can prove made a move: a copy of a new file and a
    /// delete of the old name, on the side the copy goes to, become one ``SyncAction/moveRemote(from:to:)``
    /// (or ``SyncAction/moveLocal(from:to:)``) where that side moves files natively or by a
    /// server-side copy, so a renamed folder's bytes are not sent again.
    ///
    /// Renames move only where deletes propagate (two-way, or push and pull with
    /// ``SyncOptions/deleteExtraneous``): a move deletes the old name. Equal sizes and
    /// modification times point at candidates; only a checksum decides (one a listing gave, one
    /// the state store recorded, or one computed as `--checksum` would). A candidate no
    /// checksum can decide stays a copy and a delete.
    func pairRenames(_ steps: inout [SyncStep]) async throws {
        // Only a plan with deletes has anything to pair: a push or pull without
        // `deleteExtraneous` keeps the old names, and copies the new ones.
        guard steps.contains(where: \.action.isDelete) else { return }
        if options.mode != .pull { try await pair(&steps, movingOn: .remote) }
        if options.mode != .push { try await pair(&steps, movingOn: .local) }
    }

    /// Which side a move happens on.
    enum MoveSide {
        /// A local rename, moved on the remote.
        case remote
        /// A remote rename, moved on the local side.
        case local
    }

    private func pair(_ steps: inout [SyncStep], movingOn side: MoveSide) async throws {
        let destination = side == .remote ? remote : local
        let source = side == .remote ? local : remote
        let features = destination.provider.capabilities
        guard features.supports(.move) || features.supports(.serverSideCopy) else { return }
        var copies: [(index: Int, copy: RenameCopy)] = []
        var deletes: [(index: Int, delete: RenameDelete)] = []
        for (index, step) in steps.enumerated() {
            switch (side, step.action) {
            case (.remote, .upload(let path)) where step.remote == nil:
                if let entry = step.local { copies.append((index, RenameCopy(path: path, source: entry))) }
            case (.local, .download(let path)) where step.local == nil:
                if let entry = step.remote { copies.append((index, RenameCopy(path: path, source: entry))) }
            case (.remote, .deleteRemote(let path)):
                if let entry = step.remote {
                    deletes.append((index, RenameDelete(path: path, doomed: entry, synced: step.baseline.map { ($0.local, $0.remote) })))
                }
            case (.local, .deleteLocal(let path)):
                if let entry = step.local {
                    deletes.append((index, RenameDelete(path: path, doomed: entry, synced: step.baseline.map { ($0.remote, $0.local) })))
                }
            default:
                break
            }
        }
        guard !copies.isEmpty, !deletes.isEmpty else { return }
        try await learnChecksums(&copies, &deletes, source: source, destination: destination)
        // Only what a checksum shows: size and time pointed at the candidates.
        let pairs = SyncPlanner.renames(copies: copies.map(\.copy), deletes: deletes.map(\.delete)).filter(\.proven)
        guard !pairs.isEmpty else { return }
        let copyIndex = Dictionary(copies.map { ($0.copy.path, $0) }, uniquingKeysWith: { first, _ in first })
        let deleteIndex = Dictionary(deletes.map { ($0.delete.path, $0) }, uniquingKeysWith: { first, _ in first })
        var removed = Set<Int>()
        for pair in pairs {
            guard let (copyAt, copy) = copyIndex[pair.to], let (deleteAt, delete) = deleteIndex[pair.from] else { continue }
            switch side {
            case .remote:
                steps[copyAt] = SyncStep(action: .moveRemote(from: pair.from, to: pair.to), local: copy.source, remote: delete.doomed)
            case .local:
                steps[copyAt] = SyncStep(action: .moveLocal(from: pair.from, to: pair.to), local: delete.doomed, remote: copy.source)
            }
            removed.insert(deleteAt)
        }
        steps = steps.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
    }

    /// Size and modification time together.
    private struct Stamp: Hashable {
        var size: Int64
        var modified: Date
    }

    /// Adds a checksum to each copy whose size and time match a delete's record (a rename
    /// candidate), by an algorithm the matching deletes know (listed, or recorded while the
    /// file was unchanged) and the source can compute; where no delete knows one, by an
    /// algorithm both sides can compute, for those deletes too. Hashing a local file costs a
    /// read, far less than sending it. A file that cannot be hashed stays a copy and a delete,
    /// which report what fails for them.
    private func learnChecksums(
        _ copies: inout [(index: Int, copy: RenameCopy)], _ deletes: inout [(index: Int, delete: RenameDelete)], source: SyncEndpoint,
        destination: SyncEndpoint
    ) async throws {
        func known(_ delete: RenameDelete) -> [ChecksumAlgorithm: String] {
            var found = delete.doomed.checksums
            if let (synced, here) = delete.synced, delete.doomed.isSameVersion(as: here), synced.size == delete.doomed.size {
                found.merge(here.checksums) { current, _ in current }
                found.merge(synced.checksums) { current, _ in current }
            }
            return found
        }
        var byStamp: [Stamp: [Int]] = [:]
        for (position, entry) in deletes.enumerated() {
            guard let (synced, here) = entry.delete.synced, entry.delete.doomed.isSameVersion(as: here), let modified = synced.modified else { continue }
            byStamp[Stamp(size: synced.size, modified: modified), default: []].append(position)
        }
        guard !byStamp.isEmpty else { return }
        let sourceOffers = source.provider.capabilities.checksums
        let destinationOffers = destination.provider.capabilities.checksums
        let order = { (a: ChecksumAlgorithm, b: ChecksumAlgorithm) in a.rawValue < b.rawValue }
        var copyJobs: [(position: Int, algorithm: ChecksumAlgorithm)] = []
        var deleteJobs: [Int: ChecksumAlgorithm] = [:]
        for (position, entry) in copies.enumerated() {
            guard let modified = entry.copy.source.modified, let matches = byStamp[Stamp(size: entry.copy.source.size, modified: modified)] else { continue }
            let knownByAll = matches.map { Set(known(deletes[$0].delete).keys) }
            let shared = knownByAll.dropFirst().reduce(knownByAll.first ?? []) { $0.intersection($1) }
            let computable = Set(entry.copy.source.checksums.keys).union(sourceOffers.keys)
            if let algorithm = shared.intersection(computable).sorted(by: order).first {
                if entry.copy.source.checksums[algorithm] == nil { copyJobs.append((position, algorithm)) }
            } else if let algorithm = Set(sourceOffers.keys).intersection(destinationOffers.keys).sorted(by: order).first {
                if entry.copy.source.checksums[algorithm] == nil { copyJobs.append((position, algorithm)) }
                for match in matches where known(deletes[match].delete)[algorithm] == nil { deleteJobs[match] = algorithm }
            }
        }
        let sourcePaths = copies.map(\.copy.path)
        let deletePaths = deletes.map(\.delete.path)
        let learned = Locked<(copies: [Int: (ChecksumAlgorithm, String)], deletes: [Int: (ChecksumAlgorithm, String)])>(([:], [:]))
        let jobs = copyJobs.map { (isCopy: true, position: $0.position, algorithm: $0.algorithm) }
            + deleteJobs.map { (isCopy: false, position: $0.key, algorithm: $0.value) }
        try await forEachConcurrently(jobs, width: options.maxConcurrentOperations) { job in
            let (endpoint, path) = job.isCopy ? (source, sourcePaths[job.position]) : (destination, deletePaths[job.position])
            do {
                guard let value = try await endpoint.provider.checksum(remotePath: endpoint.key(path), algorithm: job.algorithm) else { return }
                learned.withLock { found in
                    if job.isCopy { found.copies[job.position] = (job.algorithm, value) } else { found.deletes[job.position] = (job.algorithm, value) }
                }
            } catch let error as BuckiaError where error.code != .cancelled {
                // Not a move, then: the copy and the delete run as planned and report it.
            }
        }
        let found = learned.withLock { $0 }
        for (position, (algorithm, value)) in found.copies { copies[position].copy.source.checksums[algorithm] = value }
        for (position, (algorithm, value)) in found.deletes { deletes[position].delete.doomed.checksums[algorithm] = value }
    }
}
