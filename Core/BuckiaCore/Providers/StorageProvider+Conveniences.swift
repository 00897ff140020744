import Foundation

/// The seed API's string-keyed operations, and the conveniences built on the requirements.
///
/// Each `String` path is validated as an ``ObjectKey`` first, so an invalid path fails with
/// ``BuckiaError/Code/invalidPath`` before any I/O.
extension StorageProvider {
    /// Stores a local file; `remotePath` defaults to the file's name.
    @discardableResult
    public func uploadFile(localURL: URL, remotePath: String? = nil, options: UploadOptions = UploadOptions()) async throws -> RemoteFile {
        let key = try ObjectKey(remotePath ?? localURL.lastPathComponent)
        return try await uploadFile(localURL: localURL, remotePath: key, options: options)
    }

    /// Stores `data` under `remotePath`.
    @discardableResult
    public func uploadData(_ data: Data, remotePath: String, options: UploadOptions = UploadOptions()) async throws -> RemoteFile {
        try await uploadData(data, remotePath: try ObjectKey(remotePath), options: options)
    }

    /// Downloads an object to a local file.
    @discardableResult
    public func downloadFile(remotePath: String, localURL: URL, options: ReadOptions = ReadOptions()) async throws -> DownloadResult {
        try await downloadFile(remotePath: try ObjectKey(remotePath), localURL: localURL, options: options)
    }

    /// Downloads an object to a local file.
    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL) async throws -> DownloadResult {
        try await downloadFile(remotePath: remotePath, localURL: localURL, options: ReadOptions())
    }

    /// Reads a whole object into memory.
    public func readData(remotePath: String) async throws -> Data {
        try await readData(remotePath: try ObjectKey(remotePath), options: ReadOptions())
    }

    /// Reads a byte range of an object into memory (needs ``Capability/readWithRange``).
    public func readData(remotePath: String, range: Range<Int64>) async throws -> Data {
        try await readData(remotePath: try ObjectKey(remotePath), options: ReadOptions(range: range))
    }

    /// Reads an object, or a byte range of it, into memory.
    public func readData(remotePath: ObjectKey, range: Range<Int64>?) async throws -> Data {
        try await readData(remotePath: remotePath, options: ReadOptions(range: range))
    }

    /// Removes an object; removing a missing object succeeds.
    public func deleteFile(remotePath: String) async throws {
        try await deleteFile(remotePath: try ObjectKey(remotePath))
    }

    /// Describes one object, or returns nil when it does not exist.
    public func stat(remotePath: String) async throws -> RemoteFile? {
        try await stat(remotePath: try ObjectKey(remotePath))
    }

    /// Whether an object exists at `remotePath`.
    public func exists(remotePath: String) async throws -> Bool {
        try await stat(remotePath: remotePath) != nil
    }

    /// A URL that fetches the object without credentials.
    public func getPublicURL(remotePath: String) throws -> URL {
        try getPublicURL(remotePath: try ObjectKey(remotePath))
    }

    /// Lists lazily, one page at a time.
    ///
    /// The prefix is validated like a key, except that it may be empty or end in `/`.
    public func list(_ options: ListOptions = ListOptions()) -> RemoteListing {
        RemoteListing(provider: self, request: ListRequest(options: options))
    }

    /// Lists lazily from `request`, which may carry a resume token from an earlier listing.
    public func list(_ request: ListRequest) -> RemoteListing {
        RemoteListing(provider: self, request: request)
    }

    /// Every object under `path` (a folder, `""` for all), collected into an array.
    ///
    /// Prefer ``list(_:)`` for large buckets: this holds every entry in memory.
    public func listFiles(path: String? = nil) async throws -> [RemoteFile] {
        var prefix = path ?? ""
        if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
        try ObjectKey.validatePrefix(prefix)
        var files: [RemoteFile] = []
        for try await entry in list(ListOptions(prefix: prefix, recursive: true)) {
            if let file = entry.file { files.append(file) }
        }
        return files
    }
}
