import BuckiaCore
import BuckiaProviderKit
import Foundation

/// A provider that keeps objects in process memory: the executable specification of the
/// ``StorageProvider`` contract.
///
/// It passes every conformance scenario its capabilities allow and is the reference when a
/// real backend's behaviour is in doubt. Copies of one value share their objects; each
/// `init` starts empty. Memory grows with the data stored, so it does not claim
/// ``Capability/streamingTransfers``.
///
/// Options: `pageSize` (default 1000) caps listing pages.
/// Credentials: `signingKey` signs access tokens (a random key is drawn when absent).
public struct MemoryProvider: StorageProviderPlugin {
    public static let providerType: ProviderType = .memory

    struct StoredObject: Sendable {
        var data: Data
        var file: RemoteFile
    }

    /// Keyed by ``ObjectKey``, which hashes bytes: NFC and NFD spellings are two objects.
    private let objects = Locked<[ObjectKey: StoredObject]>([:])
    private let generation = Locked<UInt64>(0)
    /// Multipart uploads under way (``Capability/partUploads``), by id.
    let partUploads = Locked<[String: PartUpload]>([:])
    let signingKey: [UInt8]
    private let pageSize: Int
    let now: @Sendable () -> Date

    public let capabilities: ProviderCapabilities

    /// The options this provider reads.
    public static let knownOptions: Set<String>? = ["pageSize"]

    /// Creates an empty provider.
    public init(context: ProviderContext) throws {
        try self.init(configuration: context.configuration)
    }

    /// Creates an empty provider.
    public init(configuration: BuckiaConfiguration) throws {
        try self.init(configuration: configuration, now: { Date() })
    }

    /// Creates an empty provider with an injected clock for token expiry and server times.
    public init(configuration: BuckiaConfiguration, now: @escaping @Sendable () -> Date) throws {
        try configuration.checkOptions(known: MemoryProvider.knownOptions ?? [])
        if let raw = configuration.options["pageSize"] {
            guard let size = Int(raw), size > 0 else {
                throw BuckiaError(.invalidConfiguration, "The memory provider's pageSize must be a positive whole number; it is \(raw.debugDescription).", path: "options.pageSize")
            }
            pageSize = size
        } else {
            pageSize = 1000
        }
        if let key = configuration.authConfig.credentials["signingKey"], !key.isEmpty {
            signingKey = Array(key.exposedValue.utf8)
        } else {
            signingKey = try SecureRandom.bytes(count: 32)
        }
        self.now = now
        capabilities = ProviderCapabilities(
            features: [
                .readWithRange, .listStartAfter, .pagedListing, .accessToken, .preservesModificationTime, .serverSideCopy,
                .conditionalWrite, .conditionalRead, .verifiesKnownChecksums, .userMetadata, .contentHeaders, .setModificationTime, .move,
                .resumableListing, .partUploads, .conditionalCompletion, .partSelections,
            ],
            checksums: [.md5: .listing, .sha256: .listing],
            listedFields: [.modificationDate, .serverModified, .etag, .contentType, .metadata],
            modificationTimePrecision: .microseconds(1), maxListPageSize: pageSize)
    }

    public func testConnection() async throws -> ConnectionStatus {
        ConnectionStatus(isConnected: true, message: "In-memory store with \(objects.withLock { $0.count }) objects.")
    }

    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        let data: Data
        let modified: Date
        do {
            data = try Data(contentsOf: localURL)
            let attributes = try FileManager.default.attributesOfItem(atPath: localURL.path)
            modified = options.modificationDate ?? (attributes[.modificationDate] as? Date) ?? now()
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: localURL.path)
        }
        return try store(data, at: remotePath, options: options, modified: modified)
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try store(data, at: remotePath, options: options, modified: options.modificationDate ?? now())
    }

    func store(_ data: Data, at key: ObjectKey, options: UploadOptions, modified: Date) throws -> RemoteFile {
        try options.validate()
        var checksums: [ChecksumAlgorithm: String] = [:]
        for algorithm in [ChecksumAlgorithm.md5, .sha256] {
            if let hash = algorithm.hashAlgorithm { checksums[algorithm] = try Hashing.digest(data, hash).hex }
        }
        for (algorithm, expected) in options.knownChecksums {
            guard let hash = algorithm.hashAlgorithm else { continue }
            let actual = try checksums[algorithm] ?? Hashing.digest(data, hash).hex
            guard actual == expected else {
                throw BuckiaError.checksumMismatch(key, algorithm: algorithm, expected: expected, actual: actual, operation: "upload")
            }
        }
        // The etag names the version, not only the content: rewriting the same bytes is a new version.
        let version = generation.withLock { value -> UInt64 in
            value += 1
            return value
        }
        let file = RemoteFile(
            path: key, size: Int64(data.count), modificationDate: modified, serverModified: now(), checksums: checksums,
            contentType: options.contentType ?? "application/octet-stream", etag: "\"\(checksums[.md5] ?? "")-\(version)\"",
            metadata: RcloneMetadata.reconciled(options.metadata, modificationDate: modified, md5: checksums[.md5]),
            contentHeaders: options.contentHeaders)
        try objects.withLock { objects in
            switch options.condition {
            case .ifNoneMatch where objects[key] != nil:
                throw BuckiaError.conditionNotMatch(key, operation: "upload", "An object already exists at this key.")
            case .ifMatch(let etag) where objects[key]?.file.etag != etag:
                throw BuckiaError.conditionNotMatch(
                    key, operation: "upload", objects[key] == nil ? "No object exists at this key." : "The object has changed since the entity tag was read.")
            default:
                objects[key] = StoredObject(data: data, file: file)
            }
        }
        return file
    }

    private func object(_ key: ObjectKey, ifMatch: String? = nil, operation: String) throws -> StoredObject {
        guard let object = objects.withLock({ $0[key] }) else {
            throw BuckiaError.notFound(key, operation: operation)
        }
        if let ifMatch, object.file.etag != ifMatch {
            throw BuckiaError.conditionNotMatch(key, operation: operation, "The object has changed since the entity tag was read.")
        }
        return object
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        let object = try object(remotePath, ifMatch: options.ifMatch, operation: "download")
        let data = slice(object.data, options.range)
        do {
            try AtomicFile.write(
                to: localURL, options: AtomicFile.Options(modificationDate: object.file.modificationDate)
            ) { try $0.write(data) }
        } catch {
            throw BuckiaError.wrapping(error, operation: "download", path: localURL.path)
        }
        return DownloadResult(file: object.file, localURL: localURL)
    }

    public func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        slice(try object(remotePath, ifMatch: options.ifMatch, operation: "read").data, options.range)
    }

    private func slice(_ data: Data, _ range: Range<Int64>?) -> Data {
        guard let range else { return data }
        let lower = Int(clamping: max(0, min(range.lowerBound, Int64(data.count))))
        let upper = Int(clamping: max(Int64(lower), min(range.upperBound, Int64(data.count))))
        return data.subdata(in: lower..<upper)
    }

    public func deleteFile(remotePath: ObjectKey) async throws {
        _ = objects.withLock { $0.removeValue(forKey: remotePath) }
    }

    @discardableResult
    public func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        let object = try object(source, operation: "copy")
        var file = object.file
        file.path = destination
        file.serverModified = now()
        objects.withLock { $0[destination] = StoredObject(data: object.data, file: file) }
        return file
    }

    @discardableResult
    public func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        try objects.withLock { objects in
            guard var object = objects.removeValue(forKey: source) else { throw BuckiaError.notFound(source, operation: "move") }
            object.file.path = destination
            objects[destination] = object
            return object.file
        }
    }

    @discardableResult
    public func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile {
        try objects.withLock { objects in
            guard var object = objects[remotePath] else { throw BuckiaError.notFound(remotePath, operation: "setModificationTime") }
            object.file.modificationDate = date
            object.file.metadata = RcloneMetadata.reconciled(object.file.metadata, modificationDate: date, md5: nil)
            objects[remotePath] = object
            return object.file
        }
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        objects.withLock { $0[remotePath]?.file }
    }

    /// Lists a snapshot of the keys taken when the listing starts.
    public func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        let prefix = request.options.prefix
        let entries = objects.withLock { objects in
            objects.values.map(\.file).filter { $0.path.hasPrefix(prefix) }.map { ListEntry.object($0) }
        }
        return try SnapshotLister(entries: entries, request: request, maxPageSize: pageSize)
    }
}
