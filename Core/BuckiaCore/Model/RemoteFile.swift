import Foundation

/// What a provider knows about one stored object.
///
/// Two times are kept apart, because tools disagree otherwise: ``modificationDate`` is the
/// source file's time, which the uploader recorded (rclone's `mtime`), and
/// ``serverModified`` is when the backend stored the bytes. Which fields a listing entry
/// carries, as opposed to ``StorageProvider/stat(remotePath:)``, the provider declares in
/// ``ProviderCapabilities/listedFields`` and ``ProviderCapabilities/checksums``.
public struct RemoteFile: Hashable, Sendable, Codable {
    /// The object's key; compared by bytes.
    public var path: ObjectKey
    /// The size in bytes.
    public var size: Int64
    /// The source file's modification time, as recorded at upload (or set with
    /// ``StorageProvider/setModificationTime(remotePath:to:)``); nil when none was recorded.
    public var modificationDate: Date?
    /// When the backend last wrote the object, by its own clock; nil when it keeps none.
    public var serverModified: Date?
    /// Checksums the provider reported, as lowercase hex, keyed by algorithm.
    public var checksums: [ChecksumAlgorithm: String]
    /// The media type stored with the object.
    public var contentType: String?
    /// The provider's entity tag; opaque, and not always a content hash. Pass it to
    /// ``WriteCondition/ifMatch(_:)`` or ``ReadOptions/ifMatch`` to act only on this version.
    public var etag: String?
    /// User metadata stored with the object (``Capability/userMetadata``), names in lowercase,
    /// values as they were written. rclone's `mtime` and `md5chksum` appear here when the
    /// object has them (``RcloneMetadata``).
    public var metadata: [String: String]
    /// The representation headers stored with the object (``Capability/contentHeaders``).
    public var contentHeaders: ContentHeaders

    /// Creates a description of a stored object.
    public init(
        path: ObjectKey, size: Int64, modificationDate: Date? = nil, serverModified: Date? = nil,
        checksums: [ChecksumAlgorithm: String] = [:], contentType: String? = nil, etag: String? = nil,
        metadata: [String: String] = [:], contentHeaders: ContentHeaders = ContentHeaders()
    ) {
        self.path = path
        self.size = size
        self.modificationDate = modificationDate
        self.serverModified = serverModified
        self.checksums = checksums
        self.contentType = contentType
        self.etag = etag
        self.metadata = metadata
        self.contentHeaders = contentHeaders
    }

    private enum CodingKeys: String, CodingKey {
        case path, size, modificationDate, serverModified, checksums, contentType, etag, metadata, contentHeaders
    }

    /// Decodes a description; one written before ``contentHeaders`` existed has none.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        path = try container.decode(ObjectKey.self, forKey: .path)
        size = try container.decode(Int64.self, forKey: .size)
        modificationDate = try container.decodeIfPresent(Date.self, forKey: .modificationDate)
        serverModified = try container.decodeIfPresent(Date.self, forKey: .serverModified)
        checksums = try container.decode([ChecksumAlgorithm: String].self, forKey: .checksums)
        contentType = try container.decodeIfPresent(String.self, forKey: .contentType)
        etag = try container.decodeIfPresent(String.self, forKey: .etag)
        metadata = try container.decode([String: String].self, forKey: .metadata)
        contentHeaders = try container.decodeIfPresent(ContentHeaders.self, forKey: .contentHeaders) ?? ContentHeaders()
    }

    /// The source's modification time when one was recorded, else the server's: the time a
    /// person expects to see, and what a download gives the local file (rclone does the same).
    public var effectiveModificationDate: Date? { modificationDate ?? serverModified }
}

/// The outcome of a download.
public struct DownloadResult: Hashable, Sendable {
    /// The object that was downloaded.
    public var file: RemoteFile
    /// Where its bytes now are.
    public var localURL: URL

    /// Creates a download result.
    public init(file: RemoteFile, localURL: URL) {
        self.file = file
        self.localURL = localURL
    }
}

/// A precondition on a write, checked by the backend atomically with the write
/// (``Capability/conditionalWrite``).
public enum WriteCondition: Hashable, Sendable {
    /// Write only if no object exists at the key (`If-None-Match: *`): put-if-absent, for
    /// content-addressed chunks and for creating a lock or a marker once.
    case ifNoneMatch
    /// Write only if the object's current entity tag is this one (`If-Match`): a two-way sync
    /// replaces exactly the version it compared against, never a newer one.
    case ifMatch(String)
}

/// How to store an upload.
public struct UploadOptions: Hashable, Sendable {
    /// The media type to store; providers that keep one infer it from the extension when nil.
    public var contentType: String?
    /// The modification time to record; for file uploads, nil means the source file's.
    public var modificationDate: Date?
    /// Checksums of the content the caller already knows, as lowercase hex.
    ///
    /// A provider uses them instead of reading the source again (S3's `Content-MD5`, B2's
    /// `X-Bz-Content-Sha1`) and has the backend verify them where it can; a mismatch fails
    /// with ``BuckiaError/Code/checksumMismatch`` and stores nothing
    /// (``Capability/verifiesKnownChecksums``).
    public var knownChecksums: [ChecksumAlgorithm: String]
    /// A precondition the write must meet; nil writes unconditionally.
    public var condition: WriteCondition?
    /// User metadata to store with the object (``Capability/userMetadata``). Names are
    /// lowercase ASCII letters, digits and `-`; values are stored as given. rclone's `mtime`
    /// and `md5chksum` may be among them, in rclone's form (``RcloneMetadata``): the text is
    /// kept where it names ``modificationDate`` and the content's MD5.
    public var metadata: [String: String]
    /// Representation headers to store with the object (``Capability/contentHeaders``).
    public var contentHeaders: ContentHeaders

    /// Creates upload options.
    public init(
        contentType: String? = nil, modificationDate: Date? = nil, knownChecksums: [ChecksumAlgorithm: String] = [:],
        condition: WriteCondition? = nil, metadata: [String: String] = [:], contentHeaders: ContentHeaders = ContentHeaders()
    ) {
        self.contentType = contentType
        self.modificationDate = modificationDate
        self.knownChecksums = knownChecksums
        self.condition = condition
        self.metadata = metadata
        self.contentHeaders = contentHeaders
    }

    /// The hash functions that verify ``knownChecksums`` here, in a stable order; a checksum
    /// Buckia cannot compute (and so cannot verify) is refused.
    package func verifyingAlgorithms(operation: String = "upload") throws -> [HashAlgorithm] {
        try ChecksumAlgorithm.hashAlgorithms(verifying: knownChecksums.keys, operation: operation)
    }

    /// Checks what a provider cannot check for itself: checksum spellings and metadata names.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the bad value.
    public func validate(operation: String = "upload") throws {
        for (algorithm, value) in knownChecksums {
            guard Hex.isDigest(value, length: algorithm.hashAlgorithm?.byteCount) else {
                throw BuckiaError(
                    .invalidConfiguration, "The known \(algorithm) checksum \(value.debugDescription) is not lowercase hex of the right length.",
                    operation: operation)
            }
        }
        for name in metadata.keys {
            guard !name.isEmpty, name.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 }) else {
                throw BuckiaError(
                    .invalidConfiguration, "The metadata name \(name.debugDescription) is not allowed; use lowercase letters, digits and '-'.",
                    operation: operation)
            }
        }
        try RcloneMetadata.validate(metadata, operation: operation)
        try contentHeaders.validate(operation: operation)
        if case .ifMatch(let etag) = condition, etag.isEmpty {
            throw BuckiaError(.invalidConfiguration, "An ifMatch condition needs an entity tag.", operation: operation)
        }
    }

    /// Throws ``BuckiaError/Code/unsupported`` for an option `provider` does not support
    /// (a condition without ``Capability/conditionalWrite``, metadata without
    /// ``Capability/userMetadata``, content headers without ``Capability/contentHeaders``),
    /// so nothing is silently ignored. Known checksums are hints and never unsupported.
    public func checkSupported(by provider: some StorageProvider) throws {
        if condition != nil, !provider.capabilities.supports(.conditionalWrite) {
            throw BuckiaError.unsupported(.conditionalWrite, provider: provider.providerType, operation: "upload")
        }
        if !metadata.isEmpty, !provider.capabilities.supports(.userMetadata) {
            throw BuckiaError.unsupported(.userMetadata, provider: provider.providerType, operation: "upload")
        }
        if !contentHeaders.isEmpty, !provider.capabilities.supports(.contentHeaders) {
            throw BuckiaError.unsupported(.contentHeaders, provider: provider.providerType, operation: "upload")
        }
    }
}

/// How to read an object.
public struct ReadOptions: Hashable, Sendable {
    /// The bytes to read; nil reads the whole object. Ranges need ``Capability/readWithRange``;
    /// a range past the end is clamped.
    public var range: Range<Int64>?
    /// Read only if the object's entity tag is this one, else fail with
    /// ``BuckiaError/Code/conditionNotMatch`` (``Capability/conditionalRead``): the ranges of
    /// one read all come from the same version.
    public var ifMatch: String?

    /// Creates read options.
    public init(range: Range<Int64>? = nil, ifMatch: String? = nil) {
        self.range = range
        self.ifMatch = ifMatch
    }

    /// Throws ``BuckiaError/Code/unsupported`` for an option `provider` does not support (a
    /// range without ``Capability/readWithRange``, `ifMatch` without ``Capability/conditionalRead``).
    public func checkSupported(by provider: some StorageProvider) throws {
        if range != nil, !provider.capabilities.supports(.readWithRange) {
            throw BuckiaError.unsupported(.readWithRange, provider: provider.providerType, operation: "read")
        }
        if ifMatch != nil, !provider.capabilities.supports(.conditionalRead) {
            throw BuckiaError.unsupported(.conditionalRead, provider: provider.providerType, operation: "read")
        }
    }
}

/// The result of a connection test.
public struct ConnectionStatus: Hashable, Sendable {
    /// Whether the provider answered and accepted the credentials.
    public var isConnected: Bool
    /// A sentence describing what was checked, or what went wrong.
    public var message: String
    /// How long the check took.
    public var latency: Duration?

    /// Creates a connection status.
    public init(isConnected: Bool, message: String, latency: Duration? = nil) {
        self.isConnected = isConnected
        self.message = message
        self.latency = latency
    }
}

extension ChecksumAlgorithm {
    /// The hash functions that compute `checksums` here, sorted and without repeats; a
    /// checksum Buckia cannot compute (and so cannot verify) is refused.
    package static func hashAlgorithms(
        verifying checksums: some Sequence<ChecksumAlgorithm>, operation: String = "upload"
    ) throws -> [HashAlgorithm] {
        try Set(checksums).sorted().map { algorithm in
            guard let hash = algorithm.hashAlgorithm else {
                throw BuckiaError(
                    .invalidConfiguration, "A known \(algorithm) checksum cannot be verified: Buckia has no \(algorithm) hash function.",
                    operation: operation)
            }
            return hash
        }
    }
}
