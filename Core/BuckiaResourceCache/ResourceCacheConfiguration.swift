import BuckiaCore
import Foundation

/// Changes a resource's bytes before they are stored (a thumbnail, a re-encoding, a
/// watermark): the seed's `ImageProcessor`, over bytes.
///
/// Its ``id`` is part of each entry's key, so the same URL processed two ways is two entries,
/// and changing a processor (a new id) never serves what the old one made.
public protocol ResourceProcessor: Sendable {
    /// Names the processor and its settings (`resize-1024`, `thumbnail-v2`).
    var id: String { get }
    /// Whether the resource at `location` is processed at all.
    func shouldProcess(_ location: ResourceLocation) -> Bool
    /// The bytes to cache for `data`, downloaded from `location`.
    func process(_ data: Data, for location: ResourceLocation) throws -> Data
}

/// Every choice a resource cache makes, each with the seed's default.
public struct ResourceCacheConfiguration: Sendable {
    /// Downloads at once (the seed's `maxConcurrentDownloads`).
    public var maxConcurrentDownloads: Int = 4
    /// How a location becomes an identifier: MD5 of the URL by default.
    public var identifierProvider: any ResourceIdentifierProvider = MD5IdentifierProvider()
    /// Where an entry's file goes: flat, `{identifier}_{filename}`, by default.
    public var pathProvider: any StoragePathProvider = FlatStoragePathProvider()
    /// How bytes are kept on disk: as they came, by default.
    public var transform: any ResourceTransform = IdentityTransform()
    /// Where an entry's metadata goes: nowhere, by default.
    public var metadataProvider: (any ResourceMetadataProvider)?
    /// Which entries go first when over a limit: least recently used, by default.
    public var evictionPolicy: any CacheEvictionPolicy = LRUEvictionPolicy()
    /// What is done to bytes before they are stored: nothing, by default.
    public var processor: (any ResourceProcessor)?
    /// The disk tier's limit in bytes (nil: none). Enforced after every write.
    public var maxBytes: Int64? = 512 << 20
    /// The largest one resource may be, in bytes (nil: ``maxBytes``, the whole cache). The
    /// downloader stops a download as it crosses it — a chunked body declares no length, so a
    /// check after the download would come after the disk filled — and keeps nothing of it.
    public var maxResourceBytes: Int64?
    /// What one resource may take: ``maxResourceBytes``, else ``maxBytes``, else no limit.
    public var resourceLimit: Int64? { maxResourceBytes ?? maxBytes }
    /// The disk tier's limit in entries (nil: none).
    public var maxCount: Int?
    /// The memory tier's limit in bytes (0: no memory tier).
    public var memoryBytes: Int = 32 << 20
    /// Whether each stored file is flushed to the disk (`fsync`) before it is renamed into
    /// place, so an entry survives a power loss. Off, a file a power loss tore fails its
    /// SHA-256 check on the next read and is downloaded again (never served): for caches that
    /// would rather not wait for the disk per resource.
    public var durableWrites: Bool = true

    /// The seed's defaults.
    public init() {}
}
