import Foundation

/// The HTTP representation headers an object is stored and served with: what S3 calls system
/// metadata beside the content type (`Cache-Control`, `Content-Disposition`,
/// `Content-Encoding`, `Content-Language`, `Expires`).
///
/// Values are kept as the writer gave them, byte for byte (an `Expires` that is not a date
/// stays the text it was, as S3 keeps it). A provider that stores them declares
/// ``Capability/contentHeaders``; uploading them to one that does not is
/// ``BuckiaError/Code/unsupported``, never silently dropped.
public struct ContentHeaders: Hashable, Sendable, Codable {
    /// `Cache-Control`: how long caches may keep the object.
    public var cacheControl: String?
    /// `Content-Disposition`: inline or as a download, and the file name to save it as.
    public var contentDisposition: String?
    /// `Content-Encoding`: a coding the bytes are stored in (`gzip`), which a client undoes.
    public var contentEncoding: String?
    /// `Content-Language`: the audience's language.
    public var contentLanguage: String?
    /// `Expires`: when caches should consider the object stale.
    public var expires: String?

    /// Creates content headers; each nil header is not stored.
    public init(
        cacheControl: String? = nil, contentDisposition: String? = nil, contentEncoding: String? = nil, contentLanguage: String? = nil,
        expires: String? = nil
    ) {
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
        self.contentEncoding = contentEncoding
        self.contentLanguage = contentLanguage
        self.expires = expires
    }

    /// The header names, lowercase, as HTTP and rclone's metadata spell them.
    public static let names = ["cache-control", "content-disposition", "content-encoding", "content-language", "expires"]

    /// The value of the header `name` (any letter case); nil when it is unset or not one of ``names``.
    public subscript(name: String) -> String? {
        get {
            switch name.lowercased() {
            case "cache-control": cacheControl
            case "content-disposition": contentDisposition
            case "content-encoding": contentEncoding
            case "content-language": contentLanguage
            case "expires": expires
            default: nil
            }
        }
        set {
            switch name.lowercased() {
            case "cache-control": cacheControl = newValue
            case "content-disposition": contentDisposition = newValue
            case "content-encoding": contentEncoding = newValue
            case "content-language": contentLanguage = newValue
            case "expires": expires = newValue
            default: break
            }
        }
    }

    /// The headers that are set, in ``names``' order, names lowercase.
    public var fields: [(name: String, value: String)] {
        Self.names.compactMap { name in self[name].map { (name, $0) } }
    }

    /// Whether no header is set.
    public var isEmpty: Bool { fields.isEmpty }

    /// Refuses a value that cannot travel as an HTTP header: control characters (a CR or LF
    /// would start another header), DEL, or more than 8 KiB.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the header.
    public func validate(operation: String = "upload") throws {
        for (name, value) in fields {
            guard value.utf8.count <= 8192, !value.utf8.contains(where: { $0 < 32 && $0 != 9 || $0 == 127 }) else {
                throw BuckiaError(
                    .invalidConfiguration, "The \(name) header's value has a control character or is over 8 KiB; it cannot travel as an HTTP header.",
                    operation: operation)
            }
        }
    }
}

/// rclone's metadata conventions, which Buckia follows so each reads what the other wrote:
/// `mtime` holds the source file's modification time as decimal seconds since 1970
/// (`1700000000.123456789`), and `md5chksum` the content's MD5 in base64.
///
/// A caller that sends these names in ``UploadOptions/metadata`` (the S3 gateway passes on
/// what its clients set) has its own text stored as long as it says what the typed fields say
/// (``UploadOptions/modificationDate``, the known MD5): a client reads back byte for byte
/// what it wrote, though a `Date` holds a time only to a fraction of a microsecond.
public enum RcloneMetadata {
    /// The metadata name of the modification time.
    public static let mtime = "mtime"
    /// The metadata name of the MD5, base64.
    public static let md5 = "md5chksum"

    /// `date` as seconds since 1970 with up to nine fractional digits and no trailing zeros
    /// (`1609459200`, `1609459200.5`), the form rclone writes.
    public static func formatMtime(_ date: Date) -> String {
        let total = (date.timeIntervalSince1970 * 1_000_000_000).rounded()
        guard total.isFinite, abs(total) < 9e18 else { return String(format: "%.0f", date.timeIntervalSince1970) }
        let nanoseconds = Int64(total)
        var seconds = nanoseconds / 1_000_000_000
        var fraction = nanoseconds % 1_000_000_000
        if fraction < 0 {
            seconds -= 1
            fraction += 1_000_000_000
        }
        guard fraction != 0 else { return String(seconds) }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 9 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(seconds).\(digits)"
    }

    /// Reads an `mtime` value: decimal seconds, an optional sign and fraction (digits past the
    /// ninth are ignored); nil for anything else, or a time past year 5000 either way.
    public static func parseMtime(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 40 else { return nil }
        let parts = trimmed.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let negative = whole.hasPrefix("-")
        let digits = negative || whole.hasPrefix("+") ? whole.dropFirst() : whole
        guard !digits.isEmpty, digits.utf8.count <= 12, digits.utf8.allSatisfy({ (48...57).contains($0) }), let seconds = Int64(digits),
              seconds < 95_617_584_000
        else { return nil }
        var nanoseconds: Int64 = 0
        if parts.count == 2 {
            let fraction = parts[1]
            guard !fraction.isEmpty, fraction.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
            let nine = fraction.prefix(9)
            nanoseconds = Int64(nine + String(repeating: "0", count: 9 - nine.count)) ?? 0
        }
        let magnitude = TimeInterval(seconds) + TimeInterval(nanoseconds) / 1_000_000_000
        return Date(timeIntervalSince1970: negative ? -magnitude : magnitude)
    }

    /// The `mtime` text to store for `date`: `given` when it names the same time (to the
    /// microsecond a `Date` keeps), else Buckia's own formatting.
    public static func mtimeText(for date: Date, given: String?) -> String {
        if let given, let parsed = parseMtime(given), abs(parsed.timeIntervalSince(date)) < 1e-6 { return given }
        return formatMtime(date)
    }

    /// The `md5chksum` text to store for an MD5 (16 bytes): `given` when it is the same digest
    /// in base64, else the digest's own base64.
    public static func md5Text(for md5: Data, given: String?) -> String {
        if let given, Data(base64Encoded: given) == md5 { return given }
        return md5.base64EncodedString()
    }

    /// `metadata` as a provider stores it beside `modificationDate` and the content's MD5
    /// (lowercase hex): rclone's names keep the caller's text where it says the same, and
    /// are rewritten where it does not (a time set since, a digest of other bytes).
    public static func reconciled(_ metadata: [String: String], modificationDate: Date?, md5: String?) -> [String: String] {
        var result = metadata
        if let modificationDate, let given = metadata[mtime] {
            result[mtime] = mtimeText(for: modificationDate, given: given)
        }
        if let md5, let given = metadata[self.md5], let bytes = Hex.decode(md5) {
            result[self.md5] = md5Text(for: Data(bytes), given: given)
        }
        return result
    }

    /// Refuses `mtime` or `md5chksum` metadata that does not say what rclone's does, so no
    /// reader is handed a time or digest it cannot read.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the value.
    static func validate(_ metadata: [String: String], operation: String) throws {
        if let text = metadata[mtime], parseMtime(text) == nil {
            throw BuckiaError(
                .invalidConfiguration, "The mtime metadata \(text.debugDescription) is not decimal seconds since 1970 (rclone's form).",
                operation: operation)
        }
        if let text = metadata[md5], Data(base64Encoded: text)?.count != 16 {
            throw BuckiaError(.invalidConfiguration, "The md5chksum metadata \(text.debugDescription) is not an MD5 in base64 (rclone's form).", operation: operation)
        }
    }
}
