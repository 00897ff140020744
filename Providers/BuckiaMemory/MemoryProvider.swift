import BuckiaCore
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

    private let objects = Locked<[String: StoredObject]>([:])
    let signingKey: [UInt8]
    private let pageSize: Int
    let now: @Sendable () -> Date

    public let capabilities: ProviderCapabilities

    /// Creates an empty provider.
    public init(configuration: BuckiaConfiguration) throws {
        try self.init(configuration: configuration, now: { Date() })
    }

    /// Creates an empty provider with an injected clock for token expiry.
    public init(configuration: BuckiaConfiguration, now: @escaping @Sendable () -> Date) throws {
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
            features: [.readWithRange, .listStartAfter, .pagedListing, .accessToken, .preservesModificationTime, .serverSideCopy],
            checksums: [.md5, .sha256], maxListPageSize: pageSize)
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
        return store(data, at: remotePath, contentType: options.contentType, modified: modified)
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        store(data, at: remotePath, contentType: options.contentType, modified: options.modificationDate ?? now())
    }

    private func store(_ data: Data, at key: ObjectKey, contentType: String?, modified: Date) -> RemoteFile {
        let md5 = Hashing.digest(data, .md5).hex
        let file = RemoteFile(
            path: key.rawValue, size: Int64(data.count), modificationDate: modified,
            checksums: [.md5: md5, .sha256: Hashing.digest(data, .sha256).hex],
            contentType: contentType ?? "application/octet-stream", etag: "\"\(md5)\"")
        objects.withLock { $0[key.rawValue] = StoredObject(data: data, file: file) }
        return file
    }

    private func object(_ key: ObjectKey, operation: String) throws -> StoredObject {
        guard let object = objects.withLock({ $0[key.rawValue] }) else {
            throw BuckiaError.notFound(key, operation: operation)
        }
        return object
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL) async throws -> DownloadResult {
        let object = try object(remotePath, operation: "download")
        do {
            try AtomicFile.write(
                to: localURL, options: AtomicFile.Options(modificationDate: object.file.modificationDate)
            ) { try $0.write(object.data) }
        } catch {
            throw BuckiaError.wrapping(error, operation: "download", path: localURL.path)
        }
        return DownloadResult(file: object.file, localURL: localURL)
    }

    public func readData(remotePath: ObjectKey, range: Range<Int64>?) async throws -> Data {
        let data = try object(remotePath, operation: "read").data
        guard let range else { return data }
        let lower = Int(clamping: max(0, min(range.lowerBound, Int64(data.count))))
        let upper = Int(clamping: max(Int64(lower), min(range.upperBound, Int64(data.count))))
        return data.subdata(in: lower..<upper)
    }

    public func deleteFile(remotePath: ObjectKey) async throws {
        _ = objects.withLock { $0.removeValue(forKey: remotePath.rawValue) }
    }

    @discardableResult
    public func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        let object = try object(source, operation: "copy")
        var file = object.file
        file.path = destination.rawValue
        objects.withLock { $0[destination.rawValue] = StoredObject(data: object.data, file: file) }
        return file
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        objects.withLock { $0[remotePath.rawValue]?.file }
    }

    public func listPage(_ request: ListRequest) async throws -> ListPage {
        var builder = try ListPageBuilder(request: request, maxPageSize: pageSize)
        let prefix = request.options.prefix
        let files = objects.withLock { objects in
            objects.values.lazy.map(\.file).filter { $0.path.hasPrefix(prefix) }
        }.sorted { $0.path.utf8Precedes($1.path) }
        for file in files where !builder.offer(file) { break }
        return builder.page()
    }
}
