import BuckiaCore
import Foundation

/// Chunk bytes as objects under a prefix of any ``StorageProvider``: S3, B2, Bunny, the local
/// file system or a third party's.
///
/// Metadata goes with each object as user metadata where the provider keeps it
/// (``Capability/userMetadata``).
public struct ProviderRetrieval: ChunkStorageRetrieval {
    /// The provider chunks are stored in.
    public let provider: any StorageProvider
    /// The key prefix (empty, or ending in `/`) chunk paths are under.
    public let prefix: String

    /// Stores chunks in `provider` under `prefix`.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` for a prefix that is not a folder (`a/b/`).
    public init(provider: any StorageProvider, prefix: String = "") throws {
        self.provider = provider
        self.prefix = try ProviderRetrieval.normalize(prefix)
    }

    static func normalize(_ prefix: String) throws -> String {
        guard !prefix.isEmpty else { return "" }
        let folder = prefix.hasSuffix("/") ? prefix : prefix + "/"
        try ObjectKey.validatePrefix(folder)
        return folder
    }

    func key(_ path: String, operation: String) throws -> ObjectKey {
        try ChunkPath.validate(path, operation: operation)
        return try ObjectKey(prefix + path)
    }

    public func readChunk(at path: String) async throws -> Data? {
        let key = try key(path, operation: "read chunk")
        do {
            let data = try await provider.readData(remotePath: key, options: ReadOptions())
            guard data.count <= ChunkPath.maximumStoredSize else { throw ChunkPath.tooLarge(Int64(data.count), path: path, operation: "read chunk") }
            return data
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        }
    }

    public func writeChunk(_ data: Data, at path: String, metadata: ChunkMetadata?) async throws {
        let key = try key(path, operation: "write chunk")
        var options = UploadOptions(contentType: "application/octet-stream")
        if let metadata, provider.capabilities.supports(.userMetadata) {
            options.metadata = ProviderRetrieval.encode(metadata)
        }
        _ = try await provider.uploadData(data, remotePath: key, options: options)
    }

    public func chunkExists(at path: String) async throws -> Bool {
        try await provider.stat(remotePath: try key(path, operation: "check chunk")) != nil
    }

    public func deleteChunk(at path: String) async throws {
        do {
            try await provider.deleteFile(remotePath: try key(path, operation: "delete chunk"))
        } catch let error as BuckiaError where error.code == .notFound {}
    }

    public func readMetadata(at path: String) async throws -> ChunkMetadata? {
        guard let file = try await provider.stat(remotePath: try key(path, operation: "read chunk metadata")) else { return nil }
        return ProviderRetrieval.decode(file)
    }

    private static let sizeName = "buckia-chunk-size"
    private static let hashName = "buckia-chunk-hash"
    private static let transformsName = "buckia-chunk-transforms"
    private static let contentTypeName = "buckia-chunk-content-type"

    static func encode(_ metadata: ChunkMetadata) -> [String: String] {
        var fields = [sizeName: String(metadata.size), hashName: metadata.hashAlgorithm.rawValue, transformsName: metadata.transforms.joined(separator: ",")]
        if let type = metadata.contentType, type.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { fields[contentTypeName] = type }
        return fields
    }

    static func decode(_ file: RemoteFile) -> ChunkMetadata? {
        guard let size = file.metadata[sizeName].flatMap({ Int($0) }), let algorithm = file.metadata[hashName].flatMap(HashAlgorithm.init(rawValue:)) else {
            return nil
        }
        let transforms = (file.metadata[transformsName] ?? "").split(separator: ",").map(String.init)
        return ChunkMetadata(
            size: size, hashAlgorithm: algorithm, contentType: file.metadata[contentTypeName], transforms: transforms,
            created: file.effectiveModificationDate ?? Date(timeIntervalSince1970: 0))
    }
}

/// Existence over a provider: one listing per folder holding several of the chunks asked
/// about (a listing page answers for a thousand keys), a `stat` for the rest.
public struct ProviderExistence: ChunkStorageExistence {
    private let organization: any ChunkStorageOrganization
    private let retrieval: ProviderRetrieval
    /// How many of a batch's chunks one folder must hold before it is listed instead of
    /// stat'ed chunk by chunk.
    public let listingThreshold: Int
    /// How many `stat` requests run at once.
    public let concurrency: Int

    /// Checks chunks laid out by `organization` under `prefix` of `provider`.
    public init(provider: any StorageProvider, prefix: String = "", organization: any ChunkStorageOrganization, listingThreshold: Int = 4, concurrency: Int = 8) throws {
        self.organization = organization
        retrieval = try ProviderRetrieval(provider: provider, prefix: prefix)
        self.listingThreshold = max(1, listingThreshold)
        self.concurrency = max(1, concurrency)
    }

    public func chunkExists(identifier: ChunkIdentifier) async throws -> Bool {
        try await retrieval.chunkExists(at: organization.storagePath(for: identifier))
    }

    public func chunkExists(identifiers: [ChunkIdentifier]) async throws -> [ChunkIdentifier: Bool] {
        var byFolder: [String: Set<ChunkIdentifier>] = [:]
        for identifier in identifiers { byFolder[organization.folder(for: identifier), default: []].insert(identifier) }
        // A flat store's one folder may hold millions: never list it for a batch.
        let listed = byFolder.filter { !$0.key.isEmpty && $0.value.count >= listingThreshold }
        let stated = byFolder.filter { $0.key.isEmpty || $0.value.count < listingThreshold }.values.flatMap { $0 }
        let result = Locked<[ChunkIdentifier: Bool]>([:])
        let retrieval = retrieval
        let organization = organization
        try await forEachConcurrently(Array(listed), width: concurrency) { folder, wanted in
            var present = Set<String>()
            for try await entry in retrieval.provider.list(ListOptions(prefix: retrieval.prefix + folder, recursive: true)) {
                if let file = entry.file { present.insert(file.path.rawValue) }
            }
            let answers = wanted.map { ($0, present.contains(retrieval.prefix + organization.storagePath(for: $0))) }
            result.withLock { for (identifier, exists) in answers { $0[identifier] = exists } }
        }
        try await forEachConcurrently(Array(stated), width: concurrency) { identifier in
            let exists = try await retrieval.chunkExists(at: organization.storagePath(for: identifier))
            result.withLock { $0[identifier] = exists }
        }
        return result.withLock { $0 }
    }
}

/// Shared chunk URLs through the provider: presigned where it presigns, an authorized URL
/// where it makes those (B2), its public URL otherwise.
public struct ProviderSharing: ChunkStorageSharing {
    private let organization: any ChunkStorageOrganization
    private let retrieval: ProviderRetrieval

    /// Shares chunks laid out by `organization` under `prefix` of `provider`.
    public init(provider: any StorageProvider, prefix: String = "", organization: any ChunkStorageOrganization) throws {
        self.organization = organization
        retrieval = try ProviderRetrieval(provider: provider, prefix: prefix)
    }

    public func sharedURL(for identifier: ChunkIdentifier, expires: Duration) async throws -> URL {
        let key = try retrieval.key(organization.storagePath(for: identifier), operation: "share chunk")
        let provider = retrieval.provider
        if provider.capabilities.supports(.presign) { return try provider.presignedURL(for: key, method: .get, expires: expires) }
        if provider.capabilities.supports(.authorizedURL) { return try await provider.authorizedURL(for: key, expires: expires) }
        if provider.capabilities.supports(.publicURL) { return try provider.getPublicURL(remotePath: key) }
        throw BuckiaError.unsupported(.presign, provider: provider.providerType, operation: "share chunk")
    }
}

/// Every chunk under the prefix, by listing it.
public struct ProviderEnumeration: ChunkStorageEnumeration {
    private let organization: any ChunkStorageOrganization
    private let retrieval: ProviderRetrieval

    /// Lists chunks laid out by `organization` under `prefix` of `provider`.
    public init(provider: any StorageProvider, prefix: String = "", organization: any ChunkStorageOrganization) throws {
        self.organization = organization
        retrieval = try ProviderRetrieval(provider: provider, prefix: prefix)
    }

    public func allChunks() async throws -> [ChunkIdentifier] {
        var found: [ChunkIdentifier] = []
        for try await entry in retrieval.provider.list(ListOptions(prefix: retrieval.prefix, recursive: true)) {
            guard let file = entry.file, let path = file.path.dropping(prefix: retrieval.prefix) else { continue }
            if let identifier = organization.identifier(from: path) { found.append(identifier) }
        }
        return found
    }
}

/// A chunk store in any provider: the seed's CloudKit example, for the providers Buckia has.
///
/// ```swift
/// let storage = try ProviderChunkStorage(provider: s3, prefix: "chunks/")
/// ```
public struct ProviderChunkStorage: ChunkStorageComposable {
    public let organization: any ChunkStorageOrganization
    public let retrieval: any ChunkStorageRetrieval
    public let existence: (any ChunkStorageExistence)?
    public let sharing: (any ChunkStorageSharing)?
    public let enumeration: (any ChunkStorageEnumeration)?

    /// A store under `prefix` of `provider`, laid out by `organization`.
    public init(provider: any StorageProvider, prefix: String = "", organization: any ChunkStorageOrganization = GitStyleOrganization()) throws {
        self.organization = organization
        retrieval = try ProviderRetrieval(provider: provider, prefix: prefix)
        existence = try ProviderExistence(provider: provider, prefix: prefix, organization: organization)
        let canShare = [.presign, .publicURL, .authorizedURL].contains { provider.capabilities.supports($0) }
        sharing = canShare ? try ProviderSharing(provider: provider, prefix: prefix, organization: organization) : nil
        enumeration = try ProviderEnumeration(provider: provider, prefix: prefix, organization: organization)
    }
}
