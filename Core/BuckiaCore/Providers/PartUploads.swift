import Foundation

/// One part a backend holds for a multipart upload the caller drives
/// (``Capability/partUploads``): what S3's ListParts shows of it.
public struct UploadedPart: Sendable, Hashable {
    /// The part's number, 1 to 10,000.
    public var number: Int
    /// The part's entity tag as the backend gives it, without quotes: the MD5 of its bytes on
    /// S3 and the stores that copy it.
    public var etag: String
    /// The part's length in bytes.
    public var size: Int64
    /// When the backend received it, if it says.
    public var modified: Date?

    public init(number: Int, etag: String, size: Int64, modified: Date? = nil) {
        self.number = number
        self.etag = etag
        self.size = size
        self.modified = modified
    }
}
