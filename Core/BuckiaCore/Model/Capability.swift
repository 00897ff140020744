/// One thing a provider or engine can do, named in OpenDAL's spirit.
///
/// Callers and the conformance suite ask for capabilities instead of guessing from the
/// backend's type. An operation a backend lacks throws ``BuckiaError/Code/unsupported``;
/// it is never emulated silently.
public struct Capability: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `readData(remotePath:range:)` with a byte range fetches only that range.
    public static let readWithRange: Capability = "readWithRange"
    /// Listing honours `startAfter` natively.
    public static let listStartAfter: Capability = "listStartAfter"
    /// Listing returns results in pages with continuation tokens.
    public static let pagedListing: Capability = "pagedListing"
    /// Large uploads go in parts, in parallel, resumably.
    public static let multipartUpload: Capability = "multipartUpload"
    /// Objects can be copied without downloading them.
    public static let serverSideCopy: Capability = "serverSideCopy"
    /// Time-limited signed URLs can be made.
    public static let presign: Capability = "presign"
    /// `getPublicURL(remotePath:)` returns a URL that fetches the object.
    public static let publicURL: Capability = "publicURL"
    /// `generateAccessToken(options:)` issues scoped, expiring tokens.
    public static let accessToken: Capability = "accessToken"
    /// File transfers stream through a fixed-size buffer: memory does not grow with file size.
    public static let streamingTransfers: Capability = "streamingTransfers"
    /// An uploaded file's modification time is stored and restored on download.
    public static let preservesModificationTime: Capability = "preservesModificationTime"
    /// Data survives the provider or engine being closed and opened again.
    public static let persistent: Capability = "persistent"
    /// The engine is a ``PaginatedStorageEngine``.
    public static let pagination: Capability = "pagination"
}

/// What one provider can do.
public struct ProviderCapabilities: Sendable, Hashable {
    /// The optional features this provider supports.
    public var features: Set<Capability>
    /// Checksums the provider reports or computes for stored objects.
    public var checksums: Set<ChecksumAlgorithm>
    /// The largest number of entries one listing page returns.
    public var maxListPageSize: Int

    /// Creates a capability description.
    public init(features: Set<Capability>, checksums: Set<ChecksumAlgorithm> = [], maxListPageSize: Int = 1000) {
        self.features = features
        self.checksums = checksums
        self.maxListPageSize = maxListPageSize
    }

    /// Whether the provider offers `capability`.
    public func supports(_ capability: Capability) -> Bool { features.contains(capability) }
}
