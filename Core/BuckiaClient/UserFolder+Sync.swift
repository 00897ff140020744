import BuckiaCore
import BuckiaLocal
import BuckiaSync
import BuckiaUserFolder
import Foundation

/// What one run of the seed's folder sync did.
public struct UserFolderSyncResult: Sendable {
    /// Inbound change files downloaded, oldest first.
    public var inbound: [URL] = []
    /// The upload of `backup.sqlite`, `originals/` and `reworked/`.
    public var uploads = SyncResult()
}

extension BuckiaClient {
    /// Runs the seed's folder sync for `folder`, against `<remoteBase><user-id>/` in this
    /// bucket (`remoteBase` is a folder, `""` for the bucket's top):
    ///
    /// 1. Lists `<user-id>/inbound/` from where an unsettled change file can be (the
    ///    applier's ``InboundHistory``; a start-after listing where the provider has one),
    ///    downloads only files the applier has not settled, then has `applier` apply them (the
    ///    database layer; without one they are only downloaded, after the newest one in the
    ///    local `inbound/`).
    /// 2. Uploads `backup.sqlite` when it changed.
    /// 3. Uploads new files in `originals/` (when `includeOriginals`) and `reworked/`; files
    ///    already in the bucket are never overwritten.
    ///
    /// - Returns: The inbound files and what was uploaded.
    public func syncUserFolder(
        _ folder: UserFolder, remoteBase: String = "", includeOriginals: Bool = true, applier: (any InboundChangeApplier)? = nil,
        events: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) async throws -> UserFolderSyncResult {
        let base = remoteBase.isEmpty || remoteBase.hasSuffix("/") ? remoteBase : remoteBase + "/"
        try ObjectKey.validatePrefix(base)
        var result = UserFolderSyncResult()
        let history = try await applier?.inboundHistory() ?? newestLocalInbound(folder)
        result.inbound = try await downloadInbound(folder, remoteBase: base, wanted: history)
        // Every run, not only when something arrived: a diff waiting on a local change (the
        // app's migration) is retried.
        if let applier { try await applier.apply(result.inbound) }
        let created = ["reworked/**"] + (includeOriginals ? ["originals/**"] : [])
        let options = SyncOptions(
            mode: .push, filter: try PathFilter(include: ["backup.sqlite"] + created), createOnly: try created.map(GlobPattern.init),
            localPath: folder.url, remotePath: base + folder.userId)
        result.uploads = try await sync(options: options, events: events)
        return result
    }

    /// Without an applier: files after the newest KSUID-named file already in the local
    /// inbound folder, which are settled by being there.
    func newestLocalInbound(_ folder: UserFolder) throws -> InboundHistory {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder.inbound.path)
        } catch {
            throw BuckiaError.wrapping(error, operation: "list local inbound", path: folder.inbound.path)
        }
        let ids = names.compactMap { KSUID(String($0.prefix(KSUID.textLength))) }
        let newest = ids.max()
        return InboundHistory(newest: newest, lateArrivalWindow: .zero, settled: Set(ids.filter { $0.timestamp == newest?.timestamp }))
    }

    /// Downloads the remote inbound files `history` wants, oldest first.
    func downloadInbound(_ folder: UserFolder, remoteBase: String = "", wanted history: InboundHistory) async throws -> [URL] {
        let prefix = "\(remoteBase)\(folder.userId)/inbound/"
        var options = ListOptions(prefix: prefix)
        if let start = history.startAfter, provider.capabilities.supports(.listStartAfter) { options.startAfter = prefix + start.description }
        var wanted: [(KSUID, ObjectKey, String)] = []
        for try await entry in provider.list(options) {
            guard let file = entry.file, let name = file.path.dropping(prefix: prefix), !name.contains("/"),
                let id = KSUID(String(name.prefix(KSUID.textLength)))
            else { continue }
            // Not settled, but already here (a diff waiting on a local change): not fetched again.
            if !history.isWanted(id) || FileManager.default.fileExists(atPath: folder.inbound.appendingPathComponent(name).path) { continue }
            wanted.append((id, file.path, name))
        }
        wanted.sort { $0.0 < $1.0 || ($0.0 == $1.0 && $0.2 < $1.2) }
        let store = try LocalProvider(root: folder.inbound)
        var downloaded: [URL] = []
        for (_, key, name) in wanted {
            try await store.receiveFile(at: try ObjectKey(name), condition: nil) { url in
                _ = try await provider.downloadFile(remotePath: key, localURL: url, options: ReadOptions())
            }
            downloaded.append(folder.inbound.appendingPathComponent(name))
        }
        // The receiving store's `.buckia` (its temporaries and lock) is not the user's: gone
        // after a run that finished (a failed one leaves it for the next to tidy).
        try store.removeWorkingFiles()
        return downloaded
    }
}
