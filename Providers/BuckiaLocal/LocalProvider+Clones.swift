import BuckiaCore
import Foundation

extension LocalProvider {
    /// Stores a copy-on-write clone of `source` at `key` (``CopyOnWrite``): the clone is made
    /// in a private folder under `.buckia/tmp`, checked against the known checksums (read back:
    /// what is checked is what is stored), given its mode and date, synced when durable, and
    /// renamed into place under the root's lock where the condition is checked, as every
    /// upload is.
    ///
    /// - Parameter permissions: The object's mode bits, less the umask.
    /// - Returns: The stored object, or nil — with nothing changed — where no clone is made
    ///   (a small file, file systems that cannot clone), and the caller writes the bytes.
    func storeClone(of source: LocalFile, at key: ObjectKey, modified: Date?, permissions: mode_t, options: UploadOptions) throws -> RemoteFile? {
        let root = try openRoot(create: true)
        // Shared with every other writer of a temporary; excludes only `removeWorkingFiles()`.
        return try root.withSharedLock { () throws -> RemoteFile? in
            guard let clone = try CopyOnWrite.clone(source, in: try temporaryFolder(root)) else { return nil }
            defer { clone.discard() }
            do {
                let digests = try DigestSet(options.knownChecksums.keys.compactMap(\.hashAlgorithm))
                if !options.knownChecksums.isEmpty {
                    try clone.file.forEachChunk { chunk in
                        try BlockingWork.checkCancellation("upload")
                        digests.update(chunk)
                    }
                }
                try DigestSet.check(digests.finalize(), against: options.knownChecksums, key: key)
                try clone.file.setPermissions(permissions & ~CopyOnWrite.creationMask)
                try storeAttributes(options, modified: modified, on: clone.file)
                if let modified { try clone.file.setModificationDate(modified) }
                if durable { try clone.file.sync() }
                var location = try locate(key, create: true, operation: "upload")
                try underWriteLock(try root.folder(LocalProvider.reservedName, create: true), condition: options.condition) {
                    try placing(key, at: &location, operation: "upload") {
                        try place(CopyOnWrite.cloneName, from: clone.folder, at: $0, key: key, condition: options.condition)
                    }
                }
                // Described from the open clone once in place, so it is this version whatever comes next.
                let written = try clone.file.statRecord()
                if durable { try location.parent.sync() }
                TransferProgress.observer?.report(Int64(written.st_size))
                return remoteFile(key, written, storing: options)
            } catch let error as BuckiaError where error.code == .conditionNotMatch || error.code == .checksumMismatch {
                throw error
            } catch {
                throw mapWriteError(error, key: key, operation: "upload")
            }
        }
    }
}
