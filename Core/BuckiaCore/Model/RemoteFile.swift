import Foundation

/// What a provider knows about one stored object.
public struct RemoteFile: Hashable, Sendable, Codable {
    /// The object's key.
    public var path: String
    /// The size in bytes.
    public var size: Int64
    /// When the object's content last changed, as the provider records it.
    public var modificationDate: Date?
    /// Checksums the provider reported, as lowercase hex, keyed by algorithm.
    public var checksums: [ChecksumAlgorithm: String]
    /// The media type stored with the object.
    public var contentType: String?
    /// The provider's entity tag; opaque, and not always a content hash.
    public var etag: String?

    /// Creates a description of a stored object.
    public init(
        path: String, size: Int64, modificationDate: Date? = nil,
        checksums: [ChecksumAlgorithm: String] = [:], contentType: String? = nil, etag: String? = nil
    ) {
        self.path = path
        self.size = size
        self.modificationDate = modificationDate
        self.checksums = checksums
        self.contentType = contentType
        self.etag = etag
    }
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

/// How to store an upload.
public struct UploadOptions: Hashable, Sendable {
    /// The media type to store; providers that keep one infer it from the extension when nil.
    public var contentType: String?
    /// The modification time to record; for file uploads, nil means the source file's.
    public var modificationDate: Date?

    /// Creates upload options.
    public init(contentType: String? = nil, modificationDate: Date? = nil) {
        self.contentType = contentType
        self.modificationDate = modificationDate
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
