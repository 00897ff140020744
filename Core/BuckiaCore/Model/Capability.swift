/// A vocabulary of capabilities: the names Buckia defines, and the rule for a third party's.
///
/// Providers (``Capability``) and engines (``EngineCapability``) each have their own: a
/// provider cannot declare `pagination`, nor an engine `readWithRange`. A name Buckia defines
/// is written without a dot; a third party names its own with a reverse-DNS prefix
/// (`com.example.ftp.resumeDownloads`), which is never refused and never collides with a
/// name Buckia adds later. An undotted name Buckia does not define is a misspelling
/// (`listStartAftr`) and is refused when the plugin is built, since it would otherwise never
/// apply.
public protocol CapabilityVocabulary: StringIdentifier {
    /// Every name Buckia defines in this vocabulary.
    static var known: Set<Self> { get }
    /// What the vocabulary describes, for messages ("provider", "engine").
    static var subject: String { get }
}

extension CapabilityVocabulary {
    /// Whether this is a third party's name (one with a dot), which no check refuses.
    public var isExtension: Bool { rawValue.contains(".") }

    /// Throws unless every name in `declared` is Buckia's or a third party's.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the unknown ones and the
    ///   plugin that declared them.
    public static func checkKnown(_ declared: Set<Self>, declaredBy plugin: String) throws {
        let unknown = declared.filter { !$0.isExtension && !known.contains($0) }
        guard !unknown.isEmpty else { return }
        let names = unknown.sorted().map { $0.rawValue.debugDescription }.joined(separator: ", ")
        throw BuckiaError(
            .invalidConfiguration,
            "The \(plugin) declares \(subject) capabilities Buckia does not define: \(names). Use the \(Self.self) constants, or name a capability of your own with a reverse-DNS prefix (com.example.\(unknown.sorted().first?.rawValue ?? "feature")).")
    }
}

/// One thing a provider can do, named in OpenDAL's spirit.
///
/// Callers and the conformance suite ask for capabilities instead of guessing from the
/// backend's type. An operation a backend lacks throws ``BuckiaError/Code/unsupported``;
/// it is never emulated silently. A third party adds its own with a dotted name
/// (``CapabilityVocabulary``): `extension Capability { static let resumeDownloads: Self = "com.example.ftp.resumeDownloads" }`.
public struct Capability: CapabilityVocabulary {
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
    /// Uploads honour ``UploadOptions/condition`` (`If-None-Match: *` and `If-Match`),
    /// checked atomically with the write.
    public static let conditionalWrite: Capability = "conditionalWrite"
    /// Reads honour ``ReadOptions/ifMatch``.
    public static let conditionalRead: Capability = "conditionalRead"
    /// A wrong ``UploadOptions/knownChecksums`` value fails the upload with
    /// `checksumMismatch` and stores nothing.
    public static let verifiesKnownChecksums: Capability = "verifiesKnownChecksums"
    /// ``UploadOptions/metadata`` is stored and reported by `stat`.
    public static let userMetadata: Capability = "userMetadata"
    /// ``UploadOptions/contentHeaders`` (`Cache-Control`, `Content-Disposition`,
    /// `Content-Encoding`, `Content-Language`, `Expires`) are stored and reported by `stat`.
    public static let contentHeaders: Capability = "contentHeaders"
    /// ``StorageProvider/setModificationTime(remotePath:to:)`` changes an object's recorded
    /// time without sending its bytes again.
    public static let setModificationTime: Capability = "setModificationTime"
    /// ``StorageProvider/moveFile(from:to:)`` renames on the backend in one step.
    public static let move: Capability = "move"
    /// Listing pages carry a ``ListPage/resumeToken`` that a later listing can start from.
    public static let resumableListing: Capability = "resumableListing"
    /// Keys that differ only in letter case name the same object (a case-insensitive file
    /// system, some hosted stores). Without it, `Photo.jpg` and `photo.jpg` are two objects.
    public static let caseInsensitiveKeys: Capability = "caseInsensitiveKeys"
    /// Objects are files on this machine: ``StorageProvider/fileForReading(_:)`` and
    /// ``StorageProvider/receiveFile(at:condition:_:)`` move bytes straight between them and
    /// another provider.
    public static let localFiles: Capability = "localFiles"
    /// ``StorageProvider/authorizedURL(for:expires:)`` makes a time-limited download URL
    /// through a request to the backend.
    public static let authorizedURL: Capability = "authorizedURL"
    /// ``StorageProvider/unfinishedUploads(prefix:)`` lists, and
    /// ``StorageProvider/abortUpload(_:)`` aborts, uploads left unfinished on the server.
    public static let unfinishedUploads: Capability = "unfinishedUploads"
    /// ``StorageProvider/upload(from:remotePath:options:)`` stores a stream as it is read,
    /// holding a few parts in memory at most and copying it nowhere first: a multipart upload
    /// is under way before the stream ends.
    public static let streamingUploads: Capability = "streamingUploads"
    /// Folders exist apart from the objects in them, as a file system's directories do:
    /// ``StorageProvider/createFolder(_:)``, ``StorageProvider/folderDate(_:)`` and
    /// ``StorageProvider/deleteFolder(_:)`` work, so an S3 folder marker (`photos/`) can be one.
    public static let folders: Capability = "folders"
    /// The caller drives a multipart upload on the backend part by part, from any process:
    /// ``StorageProvider/startPartUpload(to:options:)``, ``StorageProvider/uploadPart(_:of:to:file:md5:)``,
    /// ``StorageProvider/uploadedParts(of:to:)`` and ``StorageProvider/completePartUpload(_:to:parts:condition:)``,
    /// and ``StorageProvider/abortPartUpload(_:to:)``. An S3 gateway fleet keeps its
    /// clients' multipart uploads in the backend's own this way.
    public static let partUploads: Capability = "partUploads"
    /// ``StorageProvider/completePartUpload(_:to:parts:condition:)`` honours its condition
    /// atomically. Without it (Ceph RGW 16 ignores conditions there) a conditional completion
    /// throws ``BuckiaError/Code/unsupported`` and stores nothing.
    public static let conditionalCompletion: Capability = "conditionalCompletion"
    /// ``StorageProvider/completePartUpload(_:to:parts:condition:)`` takes any ascending
    /// selection of the parts the upload holds, a single part included, as S3's
    /// CompleteMultipartUpload does. Without it (B2's large files) the parts must be every
    /// part held, numbered from 1 without a gap, and at least two; another selection throws
    /// ``BuckiaError/Code/unsupported`` and leaves the upload as it was.
    public static let partSelections: Capability = "partSelections"

    public static let subject = "provider"

    /// Every provider capability Buckia defines.
    public static let known: Set<Capability> = [
        .readWithRange, .listStartAfter, .pagedListing, .multipartUpload, .serverSideCopy, .presign, .publicURL,
        .accessToken, .streamingTransfers, .preservesModificationTime, .persistent, .conditionalWrite,
        .conditionalRead, .verifiesKnownChecksums, .userMetadata, .contentHeaders, .setModificationTime, .move, .resumableListing,
        .caseInsensitiveKeys, .localFiles, .authorizedURL, .unfinishedUploads, .streamingUploads, .folders,
        .partUploads, .conditionalCompletion, .partSelections,
    ]
}

/// One thing a storage engine can do: the engines' own vocabulary (``CapabilityVocabulary``).
public struct EngineCapability: CapabilityVocabulary {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Data survives the engine being closed and opened again.
    public static let persistent: EngineCapability = "persistent"
    /// The engine is a ``PaginatedStorageEngine``.
    public static let pagination: EngineCapability = "pagination"
    /// A batch write (``StorageEngine``'s `write` of many values) is stored whole or not at
    /// all, even when the process dies partway: `kv import` then keeps exactly the batches it
    /// reported. Without it, each value of a batch is stored atomically on its own.
    public static let atomicBatches: EngineCapability = "atomicBatches"

    public static let subject = "engine"

    /// Every engine capability Buckia defines.
    public static let known: Set<EngineCapability> = [.persistent, .pagination, .atomicBatches]
}

/// What it costs to learn one checksum of an object.
///
/// Sync decides how to compare from this: a checksum that comes free in the listing is
/// compared for every object; one that costs a request per object, or a full read, is only
/// worth it when size and time cannot decide.
public enum ChecksumCost: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// Every listing entry carries it.
    case listing
    /// ``StorageProvider/stat(remotePath:)`` reports it: one request per object. Listing
    /// entries may carry it too (S3's ETag for single-part uploads), and then agree with stat.
    case stat
    /// ``StorageProvider/checksum(remotePath:algorithm:)`` computes it by reading the object.
    case read

    public static func < (lhs: ChecksumCost, rhs: ChecksumCost) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .listing: "in the listing"
        case .stat: "by stat"
        case .read: "by reading the object"
        }
    }
}

/// The optional fields of ``RemoteFile`` that a listing entry carries.
///
/// Path and size are always there. A field declared here is present in every listing entry
/// that has it and equals what ``StorageProvider/stat(remotePath:)`` reports; a field not
/// declared may be absent from listings (and then costs a `stat`).
public struct ListedFields: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// ``RemoteFile/modificationDate``, the source file's time.
    public static let modificationDate = ListedFields(rawValue: 1 << 0)
    /// ``RemoteFile/serverModified``, the backend's time (to the second: S3 lists
    /// milliseconds but answers `stat` in whole seconds).
    public static let serverModified = ListedFields(rawValue: 1 << 1)
    /// ``RemoteFile/etag``.
    public static let etag = ListedFields(rawValue: 1 << 2)
    /// ``RemoteFile/contentType``.
    public static let contentType = ListedFields(rawValue: 1 << 3)
    /// ``RemoteFile/metadata``.
    public static let metadata = ListedFields(rawValue: 1 << 4)
}

/// What one provider can do.
public struct ProviderCapabilities: Sendable, Hashable {
    /// The optional features this provider supports.
    public var features: Set<Capability>
    /// The checksums the provider offers, each with what it costs to learn.
    public var checksums: [ChecksumAlgorithm: ChecksumCost]
    /// The optional fields listing entries carry.
    public var listedFields: ListedFields
    /// How closely a stored modification time matches the one written: a time read back is
    /// within this of the time set. Nil when the provider keeps no source times.
    public var modificationTimePrecision: Duration?
    /// The largest number of entries one listing page returns.
    public var maxListPageSize: Int
    /// The largest object the backend can hold, in bytes. A listing or description that
    /// reports a size outside `0...maximumObjectSize` is corrupt (a hostile or broken server),
    /// and is refused before any sum or allocation is made from it. The built-in providers keep
    /// the default: stores raise their limits over time, and the bound is there against sizes
    /// no object can have.
    public var maximumObjectSize: Int64
    /// The size of the parts an upload sends once it is too large for one request (a
    /// multipart upload's, a large file's), or nil where the provider sends no parts. With
    /// ``Capability/streamingUploads``, a stream longer than this goes up in parts as it is
    /// read, and memory for it is about this size × (concurrency + 1).
    public var uploadPartSize: Int64?

    /// The default ``maximumObjectSize``: 2^53 bytes (8 PiB), beyond any store's limit and
    /// far from where sums of sizes overflow.
    public static let defaultMaximumObjectSize: Int64 = 1 << 53

    /// Creates a capability description.
    public init(
        features: Set<Capability>, checksums: [ChecksumAlgorithm: ChecksumCost] = [:], listedFields: ListedFields = [],
        modificationTimePrecision: Duration? = nil, maxListPageSize: Int = 1000,
        maximumObjectSize: Int64 = ProviderCapabilities.defaultMaximumObjectSize, uploadPartSize: Int64? = nil
    ) {
        self.features = features
        self.checksums = checksums
        self.listedFields = listedFields
        self.modificationTimePrecision = modificationTimePrecision
        self.maxListPageSize = maxListPageSize
        self.maximumObjectSize = maximumObjectSize
        self.uploadPartSize = uploadPartSize
    }

    /// Whether the provider offers `capability`.
    public func supports(_ capability: Capability) -> Bool { features.contains(capability) }

    /// Refuses a description whose size no object of this provider can have: negative, or
    /// past ``maximumObjectSize``. Listings are checked page by page (``RemoteListing``); a
    /// caller that sums, allocates or loops on a size from `stat` checks it with this.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` naming the object and the size.
    public func checkSize(of file: RemoteFile, operation: String) throws {
        guard file.size < 0 || file.size > maximumObjectSize else { return }
        throw BuckiaError(
            .corrupt,
            "The provider described \(file.path.rawValue.debugDescription) with a size of \(file.size) bytes, outside what an object can have (0 to \(maximumObjectSize)); its answer is corrupt.",
            operation: operation, path: file.path.rawValue)
    }

    /// The checksums available at `cost` or cheaper, sorted.
    public func checksums(atMost cost: ChecksumCost) -> [ChecksumAlgorithm] {
        checksums.filter { $0.value <= cost }.map(\.key).sorted()
    }
}
