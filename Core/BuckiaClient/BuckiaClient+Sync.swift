import BuckiaCore
import BuckiaSync
import Foundation

extension BuckiaClient {
    /// Syncs the local folder `options.localPath` with `options.remotePath` in this bucket,
    /// remembering what was synced in a state store of the pair (under `$XDG_STATE_HOME`), so
    /// the next sync moves and asks about only what changed.
    ///
    /// ```swift
    /// let result = try await client.sync(options: SyncOptions(localPath: folder, mode: .twoWay))
    /// print("Files uploaded: \(result.filesUploaded)")
    /// ```
    ///
    /// - Parameter events: Receives each step as it happens (progress displays).
    /// - Returns: What the run did; files that failed are in ``BuckiaSync/SyncResult/failures``.
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` without a `localPath`;
    ///   what ``BuckiaSync/SyncEngine/run(events:)`` throws.
    public func sync(options: SyncOptions, events: @escaping @Sendable (SyncEvent) -> Void = { _ in }) async throws -> SyncResult {
        guard let localPath = options.localPath else {
            throw BuckiaError(.invalidConfiguration, "Sync needs options.localPath, the local folder to sync.", operation: "sync")
        }
        var options = options
        if options.maxConcurrentOperations == SyncOptions().maxConcurrentOperations {
            options.maxConcurrentOperations = configuration.maxConcurrentOperations
        }
        let local = try SyncEndpoint.localFolder(localPath)
        let remote = try SyncEndpoint.bucket(provider, configuration: configuration, path: options.remotePath)
        // Refused before anything is locked or recorded (the engine checks again).
        try local.requireApart(from: remote)
        let locks = options.dryRun ? nil : try SyncLocks.acquire(source: local, destination: remote, mode: options.mode, environment: environment)
        defer { locks?.release() }
        let location = SyncStateStore.location(source: local.identity, destination: remote.identity, environment: environment)
        let store = try SyncStateStore(url: location, readOnly: options.dryRun)
        defer { store.close() }
        return try await SyncEngine(local: local, remote: remote, options: options, stateStore: store).run(events: events)
    }
}
