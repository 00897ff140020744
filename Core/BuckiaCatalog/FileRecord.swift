import BuckiaCore
import Foundation

/// One file an app knows about: the seed's `File` entity, kept by a ``FileCatalogClient`` so
/// the app can show its files offline.
///
/// `fileId` identifies the record (an upsert replaces the record with the same `fileId`);
/// `key` (the object's key at the provider) is unique too: a record arriving with a key another
/// record holds replaces that record, as the seed's overwrite merge policy does.
public struct FileRecord: Hashable, Sendable, Codable, Identifiable {
    /// The record's identity.
    public var fileId: String
    /// The object's key at the provider; unique in a catalog.
    public var key: String
    /// The title shown to the user.
    public var title: String?
    /// Who made it.
    public var authorName: String?
    /// When it was published: ``FileCatalogClient/getFiles`` lists the newest first.
    public var publishDate: Date?
    /// Its size in bytes.
    public var size: Int64?
    /// Where it is fetched from; its last path component names the downloaded copy in the
    /// media folder (``FileCatalogConfiguration/mediaName``).
    ///
    /// Kept as its text (``urlText``) and parsed when read, so a list of thousands of records
    /// read from the catalog parses only the URLs the app looks at.
    public var url: URL? {
        get { urlText.flatMap { URL(string: $0, encodingInvalidCharacters: false) ?? URL(string: $0) } }
        set { urlText = newValue?.absoluteString }
    }
    /// The URL's text (`absoluteString`), as the catalog stores it.
    public internal(set) var urlText: String?

    /// `Identifiable`: the `fileId`.
    public var id: String { fileId }

    /// Creates a record.
    public init(
        fileId: String, key: String, title: String? = nil, authorName: String? = nil, publishDate: Date? = nil, size: Int64? = nil, url: URL? = nil
    ) {
        self.fileId = fileId
        self.key = key
        self.title = title
        self.authorName = authorName
        self.publishDate = publishDate
        self.size = size
        self.urlText = url?.absoluteString
    }

    enum CodingKeys: String, CodingKey {
        case fileId, key, title, authorName, publishDate, size, url
    }

    /// Decodes a record; `url` is a string that must parse as a URL.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        fileId = try container.decode(String.self, forKey: .fileId)
        key = try container.decode(String.self, forKey: .key)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        authorName = try container.decodeIfPresent(String.self, forKey: .authorName)
        publishDate = try container.decodeIfPresent(Date.self, forKey: .publishDate)
        size = try container.decodeIfPresent(Int64.self, forKey: .size)
        if let text = try container.decodeIfPresent(String.self, forKey: .url) {
            guard let url = URL(string: text) else {
                throw DecodingError.dataCorruptedError(forKey: .url, in: container, debugDescription: "\(text.debugDescription) is not a URL")
            }
            urlText = url.absoluteString
        }
    }

    /// Encodes a record, its URL as a string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(fileId, forKey: .fileId)
        try container.encode(key, forKey: .key)
        try container.encodeIfPresent(title, forKey: .title)
        try container.encodeIfPresent(authorName, forKey: .authorName)
        try container.encodeIfPresent(publishDate, forKey: .publishDate)
        try container.encodeIfPresent(size, forKey: .size)
        try container.encodeIfPresent(urlText, forKey: .url)
    }

    /// Throws ``BuckiaError/Code/invalidConfiguration`` for a record no catalog keeps: an
    /// empty `fileId` or `key`, a negative size, text with a NUL character.
    public func validate() throws {
        func refuse(_ problem: String) -> BuckiaError {
            BuckiaError(.invalidConfiguration, "The file record \(fileId.debugDescription) cannot be cached: \(problem).", operation: "cache file")
        }
        guard !fileId.isEmpty else { throw refuse("its fileId is empty") }
        guard !key.isEmpty else { throw refuse("its key is empty") }
        if let size, size < 0 { throw refuse("its size is negative") }
        if let publishDate, !publishDate.timeIntervalSince1970.isFinite { throw refuse("its publish date is not a finite time") }
        for text in [fileId, key, title, authorName, urlText].compactMap({ $0 }) where text.utf8.contains(0) {
            throw refuse("a field holds a NUL character")
        }
    }

    /// Equal when every field holds the same bytes: text is compared as SQLite and file
    /// systems compare it, so NFC and NFD spellings of one name are two records, as they are
    /// two keys at a provider.
    public static func == (a: FileRecord, b: FileRecord) -> Bool {
        a.fileId.utf8.elementsEqual(b.fileId.utf8) && a.key.utf8.elementsEqual(b.key.utf8) && same(a.title, b.title)
            && same(a.authorName, b.authorName) && a.publishDate == b.publishDate && a.size == b.size
            && same(a.urlText, b.urlText)
    }

    /// Hashes the bytes ``==`` compares.
    public func hash(into hasher: inout Hasher) {
        for text in [fileId, key, title, authorName, urlText] {
            if var text {
                hasher.combine(text.utf8.count)
                text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            } else {
                hasher.combine(-1)
            }
        }
        hasher.combine(publishDate)
        hasher.combine(size)
    }

    private static func same(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?): return x.utf8.elementsEqual(y.utf8)
        default: return false
        }
    }

    /// The newest first, records without a date last, then by key: the order
    /// ``FileCatalogClient/getFiles`` returns.
    public static func newestFirst(_ a: FileRecord, _ b: FileRecord) -> Bool {
        switch (a.publishDate, b.publishDate) {
        case let (x?, y?) where x != y: return x > y
        case (.some, nil): return true
        case (nil, .some): return false
        default: return a.key.utf8.lexicographicallyPrecedes(b.key.utf8)
        }
    }
}

/// Text compared and hashed by its UTF-8 bytes, as SQLite compares it: the key of the sets and
/// dictionaries that decide which records are one, without an array per string.
struct ExactText: Hashable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (a: ExactText, b: ExactText) -> Bool {
        a.text.utf8.count == b.text.utf8.count && a.text.utf8.elementsEqual(b.text.utf8)
    }

    func hash(into hasher: inout Hasher) {
        var copy = text
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
