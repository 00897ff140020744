import Foundation

/// A provider whose objects are files on this machine, so a transfer to or from another
/// provider moves bytes straight between those files and the other provider, with no copy in
/// between.
///
/// Callers never ask for this protocol: they ask for ``Capability/localFiles`` and call
/// ``StorageProvider/fileForReading(_:)``, ``StorageProvider/receiveFile(at:condition:_:)``,
/// ``StorageProvider/synchronize()`` and ``StorageProvider/removeWorkingFiles()``, which every
/// provider has and every ``ForwardingStorageProvider`` forwards, so a wrapped local provider
/// keeps its direct transfers and its durability. Adopting the protocol says so in the type;
/// declaring the capability is what turns it on.
///
/// ## Implementation requirements
///
/// - Keep the provider's own guarantees: `receiveFile` places the file as atomically as
///   ``StorageProvider/uploadFile(localURL:remotePath:options:)`` would, and checks the
///   condition the same way.
/// - Never hand out a path that leaves the provider's root.
@available(*, deprecated, message: "Declare Capability.localFiles and implement the requirements it names; this protocol adds nothing to them.")
public protocol LocalFileStore: StorageProvider {}

/// A provider of local files (``Capability/localFiles``) that hands its files out open and takes them in open, so a copy between
/// two folders on this machine (a local sync) looks each path up once and builds no URL.
///
/// Package-only, and not forwarded by ``ForwardingStorageProvider``: a wrapped local provider
/// copies through ``StorageProvider/fileForReading(_:)`` and
/// ``StorageProvider/uploadFile(localURL:remotePath:options:)`` as before, with the same
/// guarantees and a few more system calls a file.
package protocol OpenFileStore: StorageProvider {
    /// Opens the regular file at `key` for reading without following a link, with the `stat`
    /// record of what was opened and its description from that record.
    ///
    /// - Throws: What ``StorageProvider/fileForReading(_:)`` throws for the same key.
    func openForReading(_ key: ObjectKey) throws -> (file: LocalFile, status: stat, description: RemoteFile)

    /// Stores the bytes of `source` (open, at its start, described by `status`) at `key`, as
    /// ``StorageProvider/uploadFile(localURL:remotePath:options:)`` would, when that can be
    /// done on the calling task: a small file, written without `fsync`.
    ///
    /// - Returns: The stored object, or nil (nothing done) when the write belongs on the
    ///   blocking-work threads; the caller then uploads by URL.
    func storeInline(_ source: LocalFile, status: stat, at key: ObjectKey, options: UploadOptions) throws -> RemoteFile?
}

/// A provider whose caller-driven parts (``Capability/partUploads``) are written into files on
/// this machine, which takes a part's bytes as they arrive: the S3 gateway writes a request's
/// body straight to the part's place, with no file of its own in between and no second MD5.
///
/// Package-only, and not forwarded by ``ForwardingStorageProvider``: a wrapped local provider
/// takes parts through ``StorageProvider/uploadPart(_:of:to:file:md5:)``, with the same result.
package protocol LocalPartStore: StorageProvider {
    /// Stores part `number` of `upload` from what `fill` hands to the writer it is given, as
    /// ``StorageProvider/uploadPart(_:of:to:file:md5:)`` stores a file. `fill` returns the MD5
    /// of every byte it handed over: the part's entity tag, trusted as given. An error `fill`
    /// throws is rethrown as it is, and nothing of the part is kept.
    ///
    /// - Parameter length: The part's exact length when known; a part that ends short of it or
    ///   runs past it is refused.
    /// - Throws: ``BuckiaError/Code/notFound`` when the upload is gone or goes while the part
    ///   arrives (completed or aborted).
    func receivePart(_ number: Int, of upload: String, to key: ObjectKey, length: Int64?, _ fill: (_ write: (Data) throws -> Void) throws -> Digest) throws -> UploadedPart
}
