import Foundation

/// A place objects are stored: a cloud bucket, a storage zone, a local directory.
///
/// Every backend implements this one protocol, and everything above it (the client, sync,
/// the command line, the conformance suite) works with any of them.
///
/// Requirements take ``ObjectKey`` values, which are validated when built, so a path with
/// `..`, an absolute path or a NUL never reaches a provider. The `String` conveniences in
/// the protocol extension validate for you and throw ``BuckiaError/Code/invalidPath``.
///
/// ## Implementation requirements
///
/// - Be `Sendable`: one provider value is used from many tasks at once.
/// - Throw ``BuckiaError`` with the code that fits; a missing object on ``stat(remotePath:)``
///   is `nil`, on a read or download it is ``BuckiaError/Code/notFound``, and deleting a
///   missing object succeeds.
/// - Make writes atomic: a reader sees the old object or the new one, never a mix.
/// - Return listings in UTF-8 byte order of the keys, in pages of at most
///   ``ProviderCapabilities/maxListPageSize`` entries.
/// - Declare what you support in ``capabilities``; the defaults below throw
///   ``BuckiaError/Code/unsupported`` for the optional operations.
/// - Never put a credential in an error, a description or a log line.
/// - Run `BuckiaConformance`'s provider scenarios in your tests.
public protocol StorageProvider: Sendable {
    /// The type name this provider registers under.
    var providerType: ProviderType { get }

    /// What this provider supports.
    var capabilities: ProviderCapabilities { get }

    /// Prepares the provider for use (authorizes, creates the root) and checks it answers.
    ///
    /// - Returns: Whether the provider is reachable and the credentials are accepted.
    func connect() async throws -> Bool

    /// Checks the provider answers and accepts the credentials, without changing anything.
    func testConnection() async throws -> ConnectionStatus

    /// Stores the contents of a local file under `remotePath`, streaming it.
    ///
    /// - Returns: What was stored.
    @discardableResult
    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile

    /// Stores `data` under `remotePath`.
    @discardableResult
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile

    /// Stores under `remotePath` the bytes `stream` hands out, reading it once, to its end.
    ///
    /// Nothing is stored unless the stream ends normally: a stream that throws, or bytes that
    /// miss a checksum in `options.knownChecksums`, leave whatever was at `remotePath` as it
    /// was. With ``Capability/streamingUploads`` the bytes are sent (or written into place) as
    /// they arrive, holding a few parts in memory at most: S3 and B2 send one request up to a
    /// part's size and a multipart upload beyond it, the local provider writes into its own
    /// temporary area. The default reads up to 8 MiB into memory and stores that with
    /// ``uploadData(_:remotePath:options:)``, and spools a longer stream to a private
    /// temporary file for ``uploadFile(localURL:remotePath:options:)``: the right choice for a
    /// backend that must know the whole body (its length, its hash) before the request starts.
    ///
    /// - Returns: What was stored.
    /// - Throws: Whatever the stream throws; ``BuckiaError/Code/checksumMismatch`` when a
    ///   known checksum does not hold; the upload's errors otherwise.
    @discardableResult
    func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile

    /// Writes the object's bytes to `localURL`, replacing what was there only once every
    /// byte has arrived, and sets the file's modification time to the object's.
    @discardableResult
    func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult

    /// Reads an object, or a byte range of it (``ReadOptions/range``), into memory.
    func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data

    /// Removes an object. Removing an object that does not exist succeeds.
    func deleteFile(remotePath: ObjectKey) async throws

    /// Removes many objects, in as few requests as the backend allows; missing ones succeed.
    func deleteFiles(_ keys: [ObjectKey]) async throws

    /// Copies an object to another key without moving its bytes through this process (needs
    /// ``Capability/serverSideCopy``). Metadata such as the modification time is kept.
    @discardableResult
    func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile

    /// Moves an object to another key. With ``Capability/move`` the backend renames it in one
    /// step; the default copies server-side and deletes the source (needs
    /// ``Capability/serverSideCopy``), which is not atomic.
    @discardableResult
    func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile

    /// Changes the object's recorded modification time without sending its bytes again
    /// (needs ``Capability/setModificationTime``).
    @discardableResult
    func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile

    /// Describes one object, or returns nil when it does not exist.
    func stat(remotePath: ObjectKey) async throws -> RemoteFile?

    /// Starts a listing. Callers use ``list(_:)``, which makes the lister when first iterated.
    ///
    /// The prefix has been validated. Pick the helper that fits the backend:
    /// `BuckiaProviderKit` has three: `TokenPagedLister` for continuation-token APIs,
    /// `FolderWalkLister` for backends that list one folder at a time, `SnapshotLister` for
    /// keys known up front.
    func makeLister(_ request: ListRequest) async throws -> any ObjectLister

    /// Returns the object's checksum in lowercase hex, computing it if the provider can,
    /// or nil when the provider has no such checksum for it.
    func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String?

    /// A URL that fetches the object without credentials (needs ``Capability/publicURL``).
    func getPublicURL(remotePath: ObjectKey) throws -> URL

    /// A URL that lets anyone holding it read (`.get`) or write (`.put`) one object until it
    /// expires, with no other credentials (needs ``Capability/presign``).
    func presignedURL(for key: ObjectKey, method: PresignedMethod, expires: Duration) throws -> URL

    /// Issues a scoped, expiring token (needs ``Capability/accessToken``).
    func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken

    /// Opens the object (or `options.range` of it) as a stream of bytes, read as they arrive,
    /// with memory bounded however large the object.
    ///
    /// S3, B2 and Bunny stream one GET; the local provider reads the file. The default
    /// (``ObjectReadStream/byRanges(of:key:options:)``) describes the object once and reads it
    /// in ranges of 1 MiB, each of the same version (`If-Match`, or a check of the version at
    /// the end where the provider has no conditional reads), or through a temporary file where
    /// the provider has no ranged reads. Either way the stream ends with an error, not quietly,
    /// when the bytes fall short of or exceed the size, or miss a checksum of the object's.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when no object is at `remotePath`;
    ///   ``BuckiaError/Code/conditionNotMatch`` when `options.ifMatch` does not hold;
    ///   ``BuckiaError/Code/unsupported`` for an option the provider lacks.
    func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream

    // Side capabilities. Each is a requirement with a default, declared by a capability, so
    // that every wrapper (``ForwardingStorageProvider``) forwards it: one found by a downcast
    // to a protocol of its own would be lost behind any wrapper.

    /// The file that holds `key`, for a transfer that reads it by path, and the object as it
    /// is now (so a caller can tell whether it is still the version it listed). Needs
    /// ``Capability/localFiles``.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when no object is at `key`;
    ///   ``BuckiaError/Code/invalidPath`` when the way to it passes through a symbolic link.
    func fileForReading(_ key: ObjectKey) throws -> (url: URL, file: RemoteFile)

    /// Stores as `key` the file that `fill` writes, atomically, if `condition` holds. Needs
    /// ``Capability/localFiles``.
    ///
    /// `fill` receives a URL in the provider's own temporary area, on the same file system as
    /// its objects, and writes the complete file there (a download from another provider
    /// does exactly that); the file then moves into place in one rename, keeping the
    /// modification time `fill` gave it. If `fill` throws, nothing changes at `key`.
    ///
    /// - Returns: The stored object as ``stat(remotePath:)`` describes it.
    /// - Throws: ``BuckiaError/Code/conditionNotMatch`` when the condition does not hold, and
    ///   whatever `fill` throws.
    @discardableResult
    func receiveFile(at key: ObjectKey, condition: WriteCondition?, _ fill: (URL) async throws -> Void) async throws -> RemoteFile

    /// As ``receiveFile(at:condition:_:)``, storing with the file what `options` carries
    /// besides its condition (content type, content headers, metadata), as an upload would.
    /// The file's modification time is the one `fill` gave it; known checksums are not
    /// checked here (pass the file to ``uploadFile(localURL:remotePath:options:)`` for that).
    ///
    /// The default takes options with nothing but a condition, and refuses others with
    /// ``BuckiaError/Code/unsupported``.
    @discardableResult
    func receiveFile(at key: ObjectKey, options: UploadOptions, _ fill: (URL) async throws -> Void) async throws -> RemoteFile

    /// Makes every write so far durable. A provider that syncs each write as it makes it has
    /// nothing to do (the default); one that does not (for speed) flushes them all here, and
    /// sync calls this before it records a batch of files as synced.
    func synchronize() throws

    /// Removes the provider's working files (temporaries, lock files) from the folder it
    /// serves when no writer in any process is using them, so that nothing of Buckia's is
    /// left in a user's folder once a run ends. Sync calls it when a run finishes; the default
    /// has nothing to remove.
    func removeWorkingFiles() throws

    /// A URL that downloads `key` without other credentials until `expires` from now, where
    /// making one takes a request to the backend (B2's download authorizations), which the
    /// synchronous ``presignedURL(for:method:expires:)`` cannot make. Needs
    /// ``Capability/authorizedURL``.
    func authorizedURL(for key: ObjectKey, expires: Duration) async throws -> URL

    /// The uploads left unfinished on the server whose key starts with `prefix` (empty: all
    /// of them), what `buckia cleanup` works through. Needs ``Capability/unfinishedUploads``.
    func unfinishedUploads(prefix: String) async throws -> [UnfinishedUpload]

    /// Aborts `upload`, deleting its parts; an upload that is already gone is not an error.
    /// Needs ``Capability/unfinishedUploads``.
    func abortUpload(_ upload: UnfinishedUpload) async throws

    /// Starts a multipart upload to `key` on the backend that the caller drives part by part,
    /// with what `options` carries besides a condition (content type, content headers,
    /// metadata, modification date), and returns the backend's upload id. Nothing of it is
    /// kept on this machine: any process with the id and the key can add parts, list,
    /// complete or abort it (an S3 gateway fleet relies on that). Needs
    /// ``Capability/partUploads``.
    func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String

    /// Sends the file at `file` as part `number` (1 to 10,000) of `upload`, which replaces a
    /// part sent before under that number, with `md5` (the file's) for the backend to check.
    /// The file is read in place, and read again if a transient failure retries the request.
    /// Needs ``Capability/partUploads``.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when the upload is gone (completed or aborted).
    func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart

    /// The parts the backend holds for `upload`, by number. Needs ``Capability/partUploads``.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when the upload is gone.
    func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart]

    /// Makes `parts` (ascending, each as ``uploadedParts(of:to:)`` gave it) the object at
    /// `key`, if `condition` holds, and ends the upload. A completion whose answer was lost
    /// and is sent again finds the object it made. Needs ``Capability/partUploads``.
    ///
    /// - Returns: The stored object as ``stat(remotePath:)`` describes it.
    /// - Throws: ``BuckiaError/Code/notFound`` when the upload is gone;
    ///   ``BuckiaError/Code/conditionNotMatch`` when the condition does not hold.
    @discardableResult
    func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile

    /// Aborts `upload`, deleting its parts; one already gone is not an error. Needs
    /// ``Capability/partUploads``.
    func abortPartUpload(_ upload: String, to key: ObjectKey) async throws

    /// Makes the folder `key` names (and those on its way) where there is none; one already
    /// there is not an error, an object by that name is ``BuckiaError/Code/alreadyExists``.
    /// Needs ``Capability/folders``.
    func createFolder(_ key: ObjectKey) async throws

    /// The modification date of the folder `key` names, or nil when there is no folder there.
    /// Needs ``Capability/folders``.
    func folderDate(_ key: ObjectKey) async throws -> Date?

    /// Removes the folder `key` names when nothing is in it; a folder that holds objects stays
    /// (they keep it), and no folder there is not an error. Needs ``Capability/folders``.
    func deleteFolder(_ key: ObjectKey) async throws
}

extension StorageProvider {
    public func connect() async throws -> Bool {
        try await testConnection().isConnected
    }

    /// Stores `data` through a temporary file and ``uploadFile(localURL:remotePath:options:)``.
    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await TemporaryFile.with(data: data) { url in
            try await uploadFile(localURL: url, remotePath: remotePath, options: options)
        }
    }

    /// Up to 8 MiB from memory, a longer stream through a private temporary file: see
    /// ``upload(from:remotePath:options:)``.
    @discardableResult
    public func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        // Known checksums are checked over the bytes read, before anything is stored, whether
        // or not the provider checks them itself.
        let parts = try StreamParts(stream, hashing: try options.verifyingAlgorithms())
        let head = try await parts.next(upTo: StreamParts.inMemoryLimit) ?? Data()
        if try await parts.isAtEnd() {
            try parts.verify(options.knownChecksums, key: remotePath)
            return try await uploadData(head, remotePath: remotePath, options: options)
        }
        return try await TemporaryFile.with { url in
            let output = try LocalFile.createExclusive(url, permissions: 0o600)
            do {
                try output.write(head)
                while let part = try await parts.next(upTo: StreamParts.inMemoryLimit) { try output.write(part) }
                try output.close()
                try parts.verify(options.knownChecksums, key: remotePath)
            } catch {
                // The descriptor closes when `output` goes; the folder goes with the temporary.
                throw BuckiaError.wrapping(error, operation: "upload", path: remotePath.rawValue)
            }
            return try await uploadFile(localURL: url, remotePath: remotePath, options: options)
        }
    }

    /// Reads the whole object through a temporary file; ranges throw ``BuckiaError/Code/unsupported``.
    public func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        if options.range != nil {
            throw BuckiaError.unsupported(.readWithRange, provider: providerType, operation: "read")
        }
        return try await TemporaryFile.with { url in
            _ = try await downloadFile(remotePath: remotePath, localURL: url, options: options)
            return try Data(contentsOf: url)
        }
    }

    /// Reads in ranges of one version, or through a temporary file: see
    /// ``ObjectReadStream/byRanges(of:key:options:)``.
    public func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
        try await ObjectReadStream.byRanges(of: self, key: remotePath, options: options)
    }

    /// Returns the checksum ``stat(remotePath:)`` reports, if any.
    public func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        guard let file = try await stat(remotePath: remotePath) else {
            throw BuckiaError.notFound(remotePath, operation: "checksum")
        }
        return file.checksums[algorithm]
    }

    /// Copies server-side, then deletes the source; unsupported without server-side copy.
    @discardableResult
    public func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        guard capabilities.supports(.serverSideCopy) else {
            throw BuckiaError.unsupported(.move, provider: providerType, operation: "moveFile")
        }
        let moved = try await copyFile(from: source, to: destination)
        if source != destination { try await deleteFile(remotePath: source) }
        return moved
    }

    @discardableResult
    public func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile {
        throw BuckiaError.unsupported(.setModificationTime, provider: providerType, operation: "setModificationTime")
    }

    public func getPublicURL(remotePath: ObjectKey) throws -> URL {
        throw BuckiaError.unsupported(.publicURL, provider: providerType, operation: "getPublicURL")
    }

    public func presignedURL(for key: ObjectKey, method: PresignedMethod, expires: Duration) throws -> URL {
        throw BuckiaError.unsupported(.presign, provider: providerType, operation: "presignedURL")
    }

    /// Deletes one key at a time.
    public func deleteFiles(_ keys: [ObjectKey]) async throws {
        for key in keys { try await deleteFile(remotePath: key) }
    }

    @discardableResult
    public func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        throw BuckiaError.unsupported(.serverSideCopy, provider: providerType, operation: "copyFile")
    }

    public func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken {
        throw BuckiaError.unsupported(.accessToken, provider: providerType, operation: "generateAccessToken")
    }

    public func fileForReading(_ key: ObjectKey) throws -> (url: URL, file: RemoteFile) {
        throw BuckiaError.unsupported(.localFiles, provider: providerType, operation: "fileForReading")
    }

    @discardableResult
    public func receiveFile(at key: ObjectKey, condition: WriteCondition?, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        throw BuckiaError.unsupported(.localFiles, provider: providerType, operation: "receiveFile")
    }

    @discardableResult
    public func receiveFile(at key: ObjectKey, options: UploadOptions, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        guard options.contentType == nil, options.contentHeaders.isEmpty, options.metadata.isEmpty else {
            throw BuckiaError(
                .unsupported, "This provider stores no content type or metadata with a file it receives; upload the file instead.",
                operation: "receiveFile", path: key.rawValue)
        }
        return try await receiveFile(at: key, condition: options.condition, fill)
    }

    public func synchronize() throws {}

    public func removeWorkingFiles() throws {}

    public func authorizedURL(for key: ObjectKey, expires: Duration) async throws -> URL {
        throw BuckiaError.unsupported(.authorizedURL, provider: providerType, operation: "authorizedURL")
    }

    public func unfinishedUploads(prefix: String) async throws -> [UnfinishedUpload] {
        throw BuckiaError.unsupported(.unfinishedUploads, provider: providerType, operation: "unfinishedUploads")
    }

    public func abortUpload(_ upload: UnfinishedUpload) async throws {
        throw BuckiaError.unsupported(.unfinishedUploads, provider: providerType, operation: "abortUpload")
    }

    public func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String {
        throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "startPartUpload")
    }

    public func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "uploadPart")
    }

    public func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart] {
        throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "uploadedParts")
    }

    @discardableResult
    public func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "completePartUpload")
    }

    public func abortPartUpload(_ upload: String, to key: ObjectKey) async throws {
        throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "abortPartUpload")
    }

    public func createFolder(_ key: ObjectKey) async throws {
        throw BuckiaError.unsupported(.folders, provider: providerType, operation: "createFolder")
    }

    public func folderDate(_ key: ObjectKey) async throws -> Date? {
        throw BuckiaError.unsupported(.folders, provider: providerType, operation: "folderDate")
    }

    public func deleteFolder(_ key: ObjectKey) async throws {
        throw BuckiaError.unsupported(.folders, provider: providerType, operation: "deleteFolder")
    }
}

/// What a presigned URL allows.
public enum PresignedMethod: String, Sendable, CaseIterable {
    /// Download the object.
    case get = "GET"
    /// Upload the object (send the body with the `Content-Type` it was signed for, if any).
    case put = "PUT"
}

extension BuckiaError {
    /// The error for an operation a provider does not offer.
    public static func unsupported(_ capability: Capability, provider: ProviderType, operation: String) -> BuckiaError {
        BuckiaError(
            .unsupported,
            "The \(provider) provider does not support \(capability); check its capabilities before calling \(operation).",
            operation: operation)
    }

    /// The error for an object that does not exist.
    public static func notFound(_ key: ObjectKey, operation: String) -> BuckiaError {
        BuckiaError(.notFound, "No object exists at this key.", operation: operation, path: key.rawValue)
    }

    /// The error for a write or read whose condition did not hold.
    public static func conditionNotMatch(_ key: ObjectKey, operation: String, _ detail: String) -> BuckiaError {
        BuckiaError(
            .conditionNotMatch, "\(detail) Nothing was changed; read the object again and decide anew.",
            operation: operation, path: key.rawValue)
    }

    /// The error for content whose checksum is not the one the caller gave.
    public static func checksumMismatch(
        _ key: ObjectKey, algorithm: ChecksumAlgorithm, expected: String, actual: String?, operation: String
    ) -> BuckiaError {
        let got = actual.map { "the content's is \($0)" } ?? "the backend rejected it"
        return BuckiaError(
            .checksumMismatch,
            "The known \(algorithm) checksum \(expected) does not match the content (\(got)); nothing was stored. Check the source or drop the known checksum.",
            operation: operation, path: key.rawValue)
    }
}
