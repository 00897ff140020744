import Foundation

/// A provider that wraps another and forwards every requirement to it, so a wrapper (a
/// cache, an encryption layer, a fault injector) replaces only what it changes.
///
/// Without it, a wrapper that does not implement, say, `copyFile` would get the protocol's
/// default, which throws `unsupported`, while forwarding the inner provider's capabilities
/// that declare the copy: the capability would lie. Conforming here forwards everything,
/// capabilities included; override a requirement to change it, and override
/// ``capabilities`` when the wrapper changes what is supported.
///
/// ```swift
/// struct ReadOnlyProvider: ForwardingStorageProvider {
///     let base: any StorageProvider
///     var providerType: ProviderType { "readonly" }
///     func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
///         throw BuckiaError(.permissionDenied, "This remote is read-only.", operation: "upload")
///     }
///     // …and uploadData, upload(from:remotePath:options:), deleteFile, deleteFiles, copyFile,
///     // moveFile, setModificationTime, receiveFile: every requirement that writes.
/// }
/// ```
public protocol ForwardingStorageProvider: StorageProvider {
    /// The provider requests go to.
    var base: any StorageProvider { get }
}

extension ForwardingStorageProvider {
    public var providerType: ProviderType { base.providerType }
    public var capabilities: ProviderCapabilities { base.capabilities }

    public func connect() async throws -> Bool { try await base.connect() }
    public func testConnection() async throws -> ConnectionStatus { try await base.testConnection() }

    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await base.uploadFile(localURL: localURL, remotePath: remotePath, options: options)
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await base.uploadData(data, remotePath: remotePath, options: options)
    }

    @discardableResult
    public func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await base.upload(from: stream, remotePath: remotePath, options: options)
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        try await base.downloadFile(remotePath: remotePath, localURL: localURL, options: options)
    }

    public func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        try await base.readData(remotePath: remotePath, options: options)
    }

    public func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
        try await base.openRead(remotePath: remotePath, options: options)
    }

    public func deleteFile(remotePath: ObjectKey) async throws { try await base.deleteFile(remotePath: remotePath) }
    public func deleteFiles(_ keys: [ObjectKey]) async throws { try await base.deleteFiles(keys) }

    @discardableResult
    public func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        try await base.copyFile(from: source, to: destination)
    }

    @discardableResult
    public func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        try await base.moveFile(from: source, to: destination)
    }

    @discardableResult
    public func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile {
        try await base.setModificationTime(remotePath: remotePath, to: date)
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? { try await base.stat(remotePath: remotePath) }
    public func makeLister(_ request: ListRequest) async throws -> any ObjectLister { try await base.makeLister(request) }

    public func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        try await base.checksum(remotePath: remotePath, algorithm: algorithm)
    }

    public func getPublicURL(remotePath: ObjectKey) throws -> URL { try base.getPublicURL(remotePath: remotePath) }

    public func presignedURL(for key: ObjectKey, method: PresignedMethod, expires: Duration) throws -> URL {
        try base.presignedURL(for: key, method: method, expires: expires)
    }

    public func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken {
        try await base.generateAccessToken(options: options)
    }

    // The side capabilities, forwarded like the rest. A wrapper that changes the bytes (an
    // encryption layer) must override these and drop ``Capability/localFiles`` from its
    // capabilities: the base's files hold the base's bytes.

    public func fileForReading(_ key: ObjectKey) throws -> (url: URL, file: RemoteFile) { try base.fileForReading(key) }

    @discardableResult
    public func receiveFile(at key: ObjectKey, condition: WriteCondition?, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        try await base.receiveFile(at: key, condition: condition, fill)
    }

    @discardableResult
    public func receiveFile(at key: ObjectKey, options: UploadOptions, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        try await base.receiveFile(at: key, options: options, fill)
    }

    public func synchronize() throws { try base.synchronize() }
    public func removeWorkingFiles() throws { try base.removeWorkingFiles() }

    public func authorizedURL(for key: ObjectKey, expires: Duration) async throws -> URL {
        try await base.authorizedURL(for: key, expires: expires)
    }

    public func unfinishedUploads(prefix: String) async throws -> [UnfinishedUpload] { try await base.unfinishedUploads(prefix: prefix) }
    public func abortUpload(_ upload: UnfinishedUpload) async throws { try await base.abortUpload(upload) }
    public func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String {
        try await base.startPartUpload(to: key, options: options)
    }

    public func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        try await base.uploadPart(number, of: upload, to: key, file: file, md5: md5)
    }

    public func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart] {
        try await base.uploadedParts(of: upload, to: key)
    }

    @discardableResult
    public func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        try await base.completePartUpload(upload, to: key, parts: parts, condition: condition)
    }

    public func abortPartUpload(_ upload: String, to key: ObjectKey) async throws { try await base.abortPartUpload(upload, to: key) }

    public func createFolder(_ key: ObjectKey) async throws { try await base.createFolder(key) }
    public func folderDate(_ key: ObjectKey) async throws -> Date? { try await base.folderDate(key) }
    public func deleteFolder(_ key: ObjectKey) async throws { try await base.deleteFolder(key) }
}
