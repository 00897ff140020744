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
        let remote = try SyncEndpoint.bucket(provider, configuration: configuration, path: options.remotePath, environment: environment)
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

extension BuckiaClient {
    /// Keeps the local folder `options.localPath` in sync with `options.remotePath` until the
    /// task is cancelled: a pass at once, one after each burst of local changes, and one at
    /// least every ``BuckiaSync/SyncWatchOptions/pollInterval`` for changes on the remote side
    /// (see ``BuckiaSync/SyncWatch``). Files a program is still writing are held back until
    /// closed.
    ///
    /// ```swift
    /// let watching = Task {
    ///     try await client.watch(options: SyncOptions(localPath: folder, mode: .twoWay)) { pass in
    ///         if case .failure(let error) = pass { print("Sync failed, retrying: \(error)") }
    ///     }
    /// }
    /// // … later
    /// watching.cancel()
    /// ```
    ///
    /// - Parameter report: Hears each pass: its result, or why it failed (the watch goes on, and
    ///   the next pass retries).
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` without a `localPath`;
    ///   ``BuckiaCore/BuckiaError/Code/cancelled`` (or `CancellationError`) once cancelled.
    public func watch(
        options: SyncOptions, watch: SyncWatchOptions = SyncWatchOptions(), report: @escaping @Sendable (Result<SyncResult, BuckiaError>) -> Void = { _ in }
    ) async throws {
        guard let localPath = options.localPath else {
            throw BuckiaError(.invalidConfiguration, "A watch needs options.localPath, the local folder to keep in sync.", operation: "watch")
        }
        try await SyncWatch.run(folder: localPath, options: watch) { heldBack in
            var options = options
            options.heldBack = heldBack
            do {
                report(.success(try await self.sync(options: options)))
            } catch let error as BuckiaError where error.code != .cancelled {
                report(.failure(error))
            }
        }
    }
}
