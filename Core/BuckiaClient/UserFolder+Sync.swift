import BuckiaCore
import BuckiaLocal
import BuckiaSync
import Foundation

/// What applies inbound change files to the app's database: the seam the seed's
/// "apply the changes to the local SQLite database" step plugs into.
public protocol InboundChangeApplier: Sendable {
    /// The newest change file already applied, or nil when none has been. Sync downloads
    /// only files named after it.
    func lastAppliedChange() async throws -> KSUID?
    /// Applies newly downloaded change files, oldest first.
    func apply(_ files: [URL]) async throws
}

/// What one run of the seed's folder sync did.
public struct UserFolderSyncResult: Sendable {
    /// Inbound change files downloaded, oldest first.
    public var inbound: [URL] = []
    /// The upload of `backup.sqlite`, `originals/` and `reworked/`.
    public var uploads = SyncResult()
}

extension BuckiaClient {
    /// Runs the seed's folder sync for `folder`, against `<user-id>/` in this bucket:
    ///
    /// 1. Lists `<user-id>/inbound/` after the last applied change (a start-after listing
    ///    where the provider has one) and downloads only newer files, then hands them to
    ///    `applier` (the database layer; without one they are only downloaded).
    /// 2. Uploads `backup.sqlite` when it changed.
    /// 3. Uploads new files in `originals/` (when `includeOriginals`) and `reworked/`; files
    ///    already in the bucket are never overwritten.
    ///
    /// - Returns: The inbound files and what was uploaded.
    public func syncUserFolder(
        _ folder: UserFolder, includeOriginals: Bool = true, applier: (any InboundChangeApplier)? = nil,
        events: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) async throws -> UserFolderSyncResult {
        var result = UserFolderSyncResult()
        result.inbound = try await downloadInbound(folder, after: try await applier?.lastAppliedChange() ?? newestLocalInbound(folder))
        if let applier, !result.inbound.isEmpty { try await applier.apply(result.inbound) }
        let created = ["reworked/**"] + (includeOriginals ? ["originals/**"] : [])
        let options = SyncOptions(
            mode: .push, filter: try PathFilter(include: ["backup.sqlite"] + created), createOnly: try created.map(GlobPattern.init),
            localPath: folder.url, remotePath: folder.userId)
        result.uploads = try await sync(options: options, events: events)
        return result
    }

    /// The newest KSUID-named file already in the local inbound folder.
    func newestLocalInbound(_ folder: UserFolder) throws -> KSUID? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.inbound.path)) ?? []
        return names.compactMap { KSUID(String($0.prefix(KSUID.textLength))) }.max()
    }

    /// Downloads the remote inbound files named by a KSUID later than `last`, oldest first.
    func downloadInbound(_ folder: UserFolder, after last: KSUID?) async throws -> [URL] {
        let prefix = "\(folder.userId)/inbound/"
        var options = ListOptions(prefix: prefix)
        // Names of later KSUIDs sort after this key ('~' is above every base-62 digit and every
        // character an extension starts with); the last one's own files do not.
        if let last, provider.capabilities.supports(.listStartAfter) { options.startAfter = prefix + last.description + "~" }
        var wanted: [(KSUID, ObjectKey, String)] = []
        for try await entry in provider.list(options) {
            guard let file = entry.file, let name = file.path.dropping(prefix: prefix), !name.contains("/"),
                let id = KSUID(String(name.prefix(KSUID.textLength)))
            else { continue }
            if let last, id <= last { continue }
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
        return downloaded
    }
}
