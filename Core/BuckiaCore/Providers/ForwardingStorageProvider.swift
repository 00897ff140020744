import Foundation

/// A provider that wraps another and forwards every requirement to it, so a wrapper (a
/// cache, an encryption layer, a fault injector) replaces only what it changes: a layer, in
/// OpenDAL's word.
///
/// Without it, a wrapper that does not implement, say, `copyFile` would get the protocol's
/// default, which throws `unsupported`, while forwarding the inner provider's capabilities
/// that declare the copy: the capability would lie. Conforming here forwards everything,
/// capabilities included; override a requirement to change it, and override
/// ``capabilities`` when the wrapper changes what is supported.
///
/// A layer that acts on whole classes of calls implements one of two hooks instead, which every
/// forwarded requirement goes through, described by a ``ProviderCall``:
/// ``admit(_:)`` (refuse a call: read-only, a policy, an injected fault) and
/// ``intercept(_:_:)`` (wrap an async call: logging, metrics, a retry). A read-only provider
/// (an access token that may write counts as a write) is:
///
/// ```swift
/// struct ReadOnlyProvider: ForwardingStorageProvider {
///     let base: any StorageProvider
///     var providerType: ProviderType { "readonly" }
///
///     func admit(_ call: ProviderCall) throws {
///         guard call.kind == .write else { return }
///         throw BuckiaError(.permissionDenied, "This remote is read-only; \(call) was refused.", operation: call.name)
///     }
/// }
/// ```
public protocol ForwardingStorageProvider: StorageProvider {
    /// The provider requests go to.
    var base: any StorageProvider { get }

    /// Called before every forwarded requirement, synchronous or async, with what it is about
    /// to do; throw to refuse it (``base`` is then not called). The default admits everything.
    func admit(_ call: ProviderCall) throws

    /// Runs `forward` (the call to ``base``) for every forwarded async requirement, after
    /// ``admit(_:)``: the place to log, time or retry it. `forward` may be called again for a
    /// retry, except for a call whose bytes are read once (``ProviderCall/isReplayable``).
    /// The default calls it once.
    func intercept<T>(_ call: ProviderCall, _ forward: () async throws -> T) async throws -> T
}

/// A call a ``ForwardingStorageProvider`` forwards: its requirement's name, what kind of call
/// it is, and every key it touches, for a layer to decide on.
public struct ProviderCall: Sendable, Hashable, CustomStringConvertible {
    /// What a call does to the backend.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Reads an object or what is known of it (a download, a stat, a checksum, a URL to
        /// read it).
        case read
        /// Lists keys, parts or unfinished uploads.
        case list
        /// Changes what is stored, or lets someone else change it: an upload, a delete, a copy,
        /// a move, a part, a folder, a URL to upload through, an access token that may write.
        case write
        /// Connects or checks the connection.
        case connect
        /// Makes earlier writes durable or removes the provider's own working files
        /// (`synchronize`, `removeWorkingFiles`): nothing a reader sees changes, so a read-only
        /// layer lets it through (a sync from a read-only remote calls both).
        case maintenance
    }

    /// The requirement's name: `uploadFile`, `deleteFiles`, `presignedURL`, ….
    public var name: String
    /// What it does.
    public var kind: Kind
    /// Every key it touches: the source and then the destination of a copy or a move, each key
    /// of a batch delete; none for a call about no key (a listing, a connection).
    public var keys: [ObjectKey]

    /// Whether the call may be made again after it failed: false for the two that read their
    /// bytes once (`upload`, from a stream, and `receiveFile`, from its fill), true for every
    /// other. A retrying layer (``ForwardingStorageProvider/intercept(_:_:)``) checks it.
    public var isReplayable: Bool { name != "upload" && name != "receiveFile" }

    /// Describes a call.
    public init(_ name: String, _ kind: Kind, keys: [ObjectKey] = []) {
        self.name = name
        self.kind = kind
        self.keys = keys
    }

    public var description: String {
        switch keys.count {
        case 0: name
        case 1...3: "\(name) of \(keys.map { $0.rawValue.debugDescription }.joined(separator: ", "))"
        default: "\(name) of \(keys[0].rawValue.debugDescription) and \(keys.count - 1) more"
        }
    }
}

extension ForwardingStorageProvider {
    public func admit(_ call: ProviderCall) throws {}

    public func intercept<T>(_ call: ProviderCall, _ forward: () async throws -> T) async throws -> T {
        try await forward()
    }

    /// Admits `call`, then runs `body` through ``intercept(_:_:)``.
    private func forward<T>(_ name: String, _ kind: ProviderCall.Kind, _ keys: ObjectKey..., body: () async throws -> T) async throws -> T {
        try await forward(ProviderCall(name, kind, keys: keys), body)
    }

    /// Admits `call`, then runs `body` through ``intercept(_:_:)``.
    private func forward<T>(_ call: ProviderCall, _ body: () async throws -> T) async throws -> T {
        try admit(call)
        return try await intercept(call, body)
    }

    /// Admits `call`, then runs `body`: the synchronous requirements.
    private func forwardNow<T>(_ name: String, _ kind: ProviderCall.Kind, _ keys: ObjectKey..., body: () throws -> T) throws -> T {
        try admit(ProviderCall(name, kind, keys: keys))
        return try body()
    }

    public var providerType: ProviderType { base.providerType }
    public var capabilities: ProviderCapabilities { base.capabilities }

    public func connect() async throws -> Bool { try await forward("connect", .connect) { try await base.connect() } }
    public func testConnection() async throws -> ConnectionStatus { try await forward("testConnection", .connect) { try await base.testConnection() } }

    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await forward("uploadFile", .write, remotePath) { try await base.uploadFile(localURL: localURL, remotePath: remotePath, options: options) }
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await forward("uploadData", .write, remotePath) { try await base.uploadData(data, remotePath: remotePath, options: options) }
    }

    @discardableResult
    public func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await forward("upload", .write, remotePath) { try await base.upload(from: stream, remotePath: remotePath, options: options) }
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        try await forward("downloadFile", .read, remotePath) { try await base.downloadFile(remotePath: remotePath, localURL: localURL, options: options) }
    }

    public func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        try await forward("readData", .read, remotePath) { try await base.readData(remotePath: remotePath, options: options) }
    }

    public func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
        try await forward("openRead", .read, remotePath) { try await base.openRead(remotePath: remotePath, options: options) }
    }

    public func deleteFile(remotePath: ObjectKey) async throws {
        try await forward("deleteFile", .write, remotePath) { try await base.deleteFile(remotePath: remotePath) }
    }

    public func deleteFiles(_ keys: [ObjectKey]) async throws {
        try await forward(ProviderCall("deleteFiles", .write, keys: keys)) { try await base.deleteFiles(keys) }
    }

    @discardableResult
    public func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        try await forward("copyFile", .write, source, destination) { try await base.copyFile(from: source, to: destination) }
    }

    @discardableResult
    public func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        try await forward("moveFile", .write, source, destination) { try await base.moveFile(from: source, to: destination) }
    }

    @discardableResult
    public func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile {
        try await forward("setModificationTime", .write, remotePath) { try await base.setModificationTime(remotePath: remotePath, to: date) }
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        try await forward("stat", .read, remotePath) { try await base.stat(remotePath: remotePath) }
    }

    public func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        try await forward("makeLister", .list) { try await base.makeLister(request) }
    }

    public func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        try await forward("checksum", .read, remotePath) { try await base.checksum(remotePath: remotePath, algorithm: algorithm) }
    }

    public func getPublicURL(remotePath: ObjectKey) throws -> URL {
        try forwardNow("getPublicURL", .read, remotePath) { try base.getPublicURL(remotePath: remotePath) }
    }

    public func presignedURL(for key: ObjectKey, method: PresignedMethod, expires: Duration) throws -> URL {
        try forwardNow("presignedURL", method == .get ? .read : .write, key) { try base.presignedURL(for: key, method: method, expires: expires) }
    }

    public func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken {
        try await forward("generateAccessToken", options.permissions.isSubset(of: .readOnly) ? .read : .write) { try await base.generateAccessToken(options: options) }
    }

    // The side capabilities, forwarded like the rest. A wrapper that changes the bytes (an
    // encryption layer) must override these and drop ``Capability/localFiles`` from its
    // capabilities: the base's files hold the base's bytes.

    public func fileForReading(_ key: ObjectKey) throws -> (url: URL, file: RemoteFile) {
        try forwardNow("fileForReading", .read, key) { try base.fileForReading(key) }
    }

    @discardableResult
    public func receiveFile(at key: ObjectKey, condition: WriteCondition?, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        try await forward("receiveFile", .write, key) { try await base.receiveFile(at: key, condition: condition, fill) }
    }

    @discardableResult
    public func receiveFile(at key: ObjectKey, options: UploadOptions, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        try await forward("receiveFile", .write, key) { try await base.receiveFile(at: key, options: options, fill) }
    }

    public func synchronize() throws { try forwardNow("synchronize", .maintenance) { try base.synchronize() } }
    public func removeWorkingFiles() throws { try forwardNow("removeWorkingFiles", .maintenance) { try base.removeWorkingFiles() } }

    public func authorizedURL(for key: ObjectKey, expires: Duration) async throws -> URL {
        try await forward("authorizedURL", .read, key) { try await base.authorizedURL(for: key, expires: expires) }
    }

    public func unfinishedUploads(prefix: String) async throws -> [UnfinishedUpload] {
        try await forward("unfinishedUploads", .list) { try await base.unfinishedUploads(prefix: prefix) }
    }

    public func abortUpload(_ upload: UnfinishedUpload) async throws {
        try await forward("abortUpload", .write) { try await base.abortUpload(upload) }
    }

    public func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String {
        try await forward("startPartUpload", .write, key) { try await base.startPartUpload(to: key, options: options) }
    }

    public func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        try await forward("uploadPart", .write, key) { try await base.uploadPart(number, of: upload, to: key, file: file, md5: md5) }
    }

    public func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart] {
        try await forward("uploadedParts", .list, key) { try await base.uploadedParts(of: upload, to: key) }
    }

    @discardableResult
    public func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        try await forward("completePartUpload", .write, key) { try await base.completePartUpload(upload, to: key, parts: parts, condition: condition) }
    }

    public func abortPartUpload(_ upload: String, to key: ObjectKey) async throws {
        try await forward("abortPartUpload", .write, key) { try await base.abortPartUpload(upload, to: key) }
    }

    public func createFolder(_ key: ObjectKey) async throws { try await forward("createFolder", .write, key) { try await base.createFolder(key) } }
    public func folderDate(_ key: ObjectKey) async throws -> Date? { try await forward("folderDate", .read, key) { try await base.folderDate(key) } }
    public func deleteFolder(_ key: ObjectKey) async throws { try await forward("deleteFolder", .write, key) { try await base.deleteFolder(key) } }
}
