import Foundation

/// A provider whose objects are files on this machine, so a transfer to or from another
/// provider moves bytes straight between those files and the other provider, with no copy in
/// between.
///
/// Sync and the command line ask for it (`provider as? any LocalFileStore`) when one side of a
/// transfer is local. A provider over a mounted volume can adopt it too.
///
/// ## Implementation requirements
///
/// - Keep the provider's own guarantees: ``receiveFile(at:condition:_:)`` places the file as
///   atomically as ``StorageProvider/uploadFile(localURL:remotePath:options:)`` would, and
///   checks the condition the same way.
/// - Never hand out a path that leaves the provider's root.
public protocol LocalFileStore: StorageProvider {
    /// The file that holds `key`, for a transfer that reads it by path, and the object as it
    /// is now (so a caller can tell whether it is still the version it listed).
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when no object is at `key`;
    ///   ``BuckiaError/Code/invalidPath`` when the way to it passes through a symbolic link.
    func fileForReading(_ key: ObjectKey) throws -> (url: URL, file: RemoteFile)

    /// Stores as `key` the file that `fill` writes, atomically, if `condition` holds.
    ///
    /// `fill` receives a URL in the provider's own temporary area, on the same file system as
    /// its objects, and writes the complete file there (a download from another provider
    /// does exactly that); the file then moves into place in one rename, keeping the
    /// modification time `fill` gave it. If `fill` throws, nothing changes at `key`.
    ///
    /// - Returns: The stored object as ``StorageProvider/stat(remotePath:)`` describes it.
    /// - Throws: ``BuckiaError/Code/conditionNotMatch`` when the condition does not hold, and
    ///   whatever `fill` throws.
    @discardableResult
    func receiveFile(at key: ObjectKey, condition: WriteCondition?, _ fill: (URL) async throws -> Void) async throws -> RemoteFile

    /// Makes every write so far durable. A provider that syncs each file as it writes it has
    /// nothing to do; one that does not (for speed) flushes them all here, and sync calls this
    /// before it records a batch of files as synced.
    func synchronize() throws

    /// Removes the provider's working files (temporaries, lock files) from the folder it
    /// serves when no writer in any process is using them, so that nothing of Buckia's is
    /// left in a user's folder once a run ends. Sync calls it when a run finishes. A writer at
    /// work keeps them; the next call removes them.
    func removeWorkingFiles() throws
}

extension LocalFileStore {
    public func synchronize() throws {}

    public func removeWorkingFiles() throws {}
}
