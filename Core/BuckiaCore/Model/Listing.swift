/// One entry of a listing: an object, a folder when listing one level, or a key the backend
/// holds that Buckia cannot address.
public enum ListEntry: Hashable, Sendable {
    /// A stored object.
    case object(RemoteFile)
    /// A common prefix ending in `/`, returned instead of the objects under it when listing
    /// one level.
    case directory(String)
    /// A key the backend holds that is not a valid ``ObjectKey`` (a console's `folder/`
    /// marker, an empty segment, a file name that is not UTF-8). It is reported, with the
    /// reason, so an operation over a tree can count and name what it left alone instead of
    /// failing or silently losing it.
    case unaddressable(UnaddressableKey)

    /// The entry's key or prefix, as text.
    public var path: String {
        switch self {
        case .object(let file): file.path.rawValue
        case .directory(let prefix): prefix
        case .unaddressable(let key): key.displayName
        }
    }

    /// The object, when this entry is one.
    public var file: RemoteFile? {
        if case .object(let file) = self { return file }
        return nil
    }

    /// The unaddressable key, when this entry is one.
    public var unaddressable: UnaddressableKey? {
        if case .unaddressable(let key) = self { return key }
        return nil
    }

    /// The entry's bytes, which order a listing.
    package var sortBytes: [UInt8] {
        switch self {
        case .object(let file): Array(file.path.rawValue.utf8)
        case .directory(let prefix): Array(prefix.utf8)
        case .unaddressable(let key): key.bytes
        }
    }

    /// Entries are equal when their bytes are: NFC and NFD spellings of a folder are two folders.
    public static func == (lhs: ListEntry, rhs: ListEntry) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)): a == b
        case (.directory(let a), .directory(let b)): a.utf8Equals(b)
        case (.unaddressable(let a), .unaddressable(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .object(let file): hasher.combine(0); hasher.combine(file)
        case .directory(let prefix): hasher.combine(1); hasher.combine(Array(prefix.utf8))
        case .unaddressable(let key): hasher.combine(2); hasher.combine(key)
        }
    }
}

/// A key a backend holds that Buckia cannot address, and why.
public struct UnaddressableKey: Hashable, Sendable, CustomStringConvertible {
    /// The key's bytes as the backend holds them.
    public var bytes: [UInt8]
    /// Why it cannot be an ``ObjectKey``.
    public var reason: String

    /// Describes a key Buckia cannot address.
    public init(bytes: [UInt8], reason: String) {
        self.bytes = bytes
        self.reason = reason
    }

    /// Describes a key given as text.
    public init(_ key: String, reason: String) {
        self.init(bytes: Array(key.utf8), reason: reason)
    }

    /// The key for people: valid UTF-8 as text, other bytes as `\xNN`.
    public var displayName: String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var result = ""
        var rest = bytes[...]
        while !rest.isEmpty {
            // The longest valid prefix, then one escaped byte.
            var end = rest.endIndex
            while end > rest.startIndex, String(validating: rest[rest.startIndex..<end], as: UTF8.self) == nil {
                end -= 1
            }
            if end > rest.startIndex {
                result += String(decoding: rest[rest.startIndex..<end], as: UTF8.self)
                rest = rest[end...]
            } else if let byte = rest.first {
                result += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
                rest = rest.dropFirst()
            }
        }
        return result
    }

    public var description: String { "\(displayName.debugDescription): \(reason)" }

    /// The entry for `raw` if it is a valid key, or an unaddressable entry saying why not.
    public static func entry(for raw: String, _ makeFile: (ObjectKey) -> RemoteFile) -> ListEntry {
        do {
            return .object(makeFile(try ObjectKey(raw)))
        } catch let error as BuckiaError {
            return .unaddressable(UnaddressableKey(raw, reason: error.message))
        } catch {
            return .unaddressable(UnaddressableKey(raw, reason: "\(error)"))
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// What to list.
public struct ListOptions: Hashable, Sendable {
    /// Only keys whose bytes start with this string. It is a string prefix, not a folder:
    /// `"photo"` matches `"photo.jpg"` and `"photos/a.jpg"`. End it with `/` to list a folder.
    public var prefix: String
    /// List every key under the prefix (`true`), or one level with folders rolled up into
    /// ``ListEntry/directory(_:)`` entries (`false`).
    public var recursive: Bool
    /// Only keys that sort after this one (by UTF-8 bytes).
    public var startAfter: String?
    /// How many entries to ask for per page; the provider may return fewer.
    public var pageSize: Int?

    /// Creates listing options.
    public init(prefix: String = "", recursive: Bool = true, startAfter: String? = nil, pageSize: Int? = nil) {
        self.prefix = prefix
        self.recursive = recursive
        self.startAfter = startAfter
        self.pageSize = pageSize
    }

    /// Listing options compare by bytes.
    public static func == (lhs: ListOptions, rhs: ListOptions) -> Bool {
        lhs.prefix.utf8Equals(rhs.prefix) && lhs.recursive == rhs.recursive && lhs.pageSize == rhs.pageSize
            && lhs.startAfter.map(Array.init(_:)) == rhs.startAfter.map(Array.init(_:))
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(prefix.utf8))
        hasher.combine(recursive)
        hasher.combine(startAfter.map { Array($0.utf8) })
        hasher.combine(pageSize)
    }

    /// The page size to use for a provider whose pages hold at most `maximum` entries.
    public func effectivePageSize(maximum: Int) -> Int {
        max(1, min(pageSize ?? maximum, max(1, maximum)))
    }
}

/// Where a listing starts: its options, and optionally a token from an earlier listing's page.
public struct ListRequest: Hashable, Sendable {
    /// What to list.
    public var options: ListOptions
    /// A ``ListPage/resumeToken`` from an earlier listing with the same options: the new
    /// listing continues right after that page. Needs ``Capability/resumableListing``.
    public var resumeToken: String?

    /// Creates a listing request.
    public init(options: ListOptions, resumeToken: String? = nil) {
        self.options = options
        self.resumeToken = resumeToken
    }
}

/// One page of a listing, in UTF-8 byte order of the entries' paths.
public struct ListPage: Hashable, Sendable {
    /// The entries of this page.
    public var entries: [ListEntry]
    /// A token that resumes the listing after this page in a later ``ListRequest``, or nil when
    /// the provider cannot resume (or this is the last page).
    public var resumeToken: String?

    /// Creates a page.
    public init(entries: [ListEntry], resumeToken: String? = nil) {
        self.entries = entries
        self.resumeToken = resumeToken
    }
}

/// A listing in progress, owned and driven by the provider that made it.
///
/// A provider keeps whatever state its backend needs between pages here: an S3 continuation
/// token, the folders a directory walk has open, a snapshot of sorted keys. Nothing is read
/// twice: a folder-organised backend reads each folder once per listing, however many pages
/// it fills.
///
/// ## Implementation requirements
///
/// - Return pages of at most ``ListOptions/effectivePageSize(maximum:)`` entries, in UTF-8
///   byte order across the whole listing, and nil once the listing is complete.
/// - Throw on any failure to read part of the listing (an unreadable folder, a failed
///   request): a truncated listing that looks complete makes sync delete what it did not see.
/// - One consumer calls ``nextPage()`` at a time; make the lister an actor or guard its state
///   with a lock.
public protocol ObjectLister: Sendable {
    /// The next page, or nil when the listing is complete.
    func nextPage() async throws -> ListPage?
}

/// A listing that fetches pages only as they are consumed.
///
/// Memory is bounded by one page, however many objects the listing covers. The provider's
/// lister is made on the first call to `next()`, so making a listing does no I/O.
///
/// ```swift
/// for try await entry in provider.list(ListOptions(prefix: "photos/")) {
///     print(entry.path)
/// }
/// ```
public struct RemoteListing: AsyncSequence, Sendable {
    public typealias Element = ListEntry

    let provider: any StorageProvider
    let request: ListRequest

    /// Creates a listing of `provider` that starts at `request`.
    public init(provider: any StorageProvider, request: ListRequest) {
        self.provider = provider
        self.request = request
    }

    /// The listing's pages, for callers that want to work page by page.
    public var pages: Pages { Pages(provider: provider, request: request) }

    public func makeAsyncIterator() -> Iterator {
        Iterator(pages: pages.makeAsyncIterator())
    }

    /// Iterates entry by entry over lazily fetched pages.
    public struct Iterator: AsyncIteratorProtocol {
        var pages: Pages.Iterator
        var buffer: [ListEntry] = []
        var index = 0

        public mutating func next() async throws -> ListEntry? {
            while index == buffer.count {
                guard let page = try await pages.next() else { return nil }
                buffer = page.entries
                index = 0
            }
            defer { index += 1 }
            return buffer[index]
        }
    }

    /// The pages of a listing.
    public struct Pages: AsyncSequence, Sendable {
        public typealias Element = ListPage

        let provider: any StorageProvider
        let request: ListRequest

        public func makeAsyncIterator() -> Iterator {
            Iterator(provider: provider, request: request)
        }

        /// Asks the provider's lister for one page per call. It may move to another task
        /// between pages (a sync fetches each side's next page while it merges this one).
        public struct Iterator: AsyncIteratorProtocol, Sendable {
            let provider: any StorageProvider
            let request: ListRequest
            var lister: (any ObjectLister)?
            var finished = false

            init(provider: any StorageProvider, request: ListRequest) {
                self.provider = provider
                self.request = request
            }

            /// Refuses a page that lists an object of a size no object can have: negative, or
            /// past the provider's ``ProviderCapabilities/maximumObjectSize`` (S3's `<Size>`,
            /// B2's `contentLength` and Bunny's `Length` are whatever the server says).
            static func checkSizes(_ page: ListPage, capabilities: ProviderCapabilities) throws {
                for entry in page.entries {
                    if case .object(let file) = entry { try capabilities.checkSize(of: file, operation: "list") }
                }
            }

            public mutating func next() async throws -> ListPage? {
                if finished { return nil }
                try Task.checkCancellation()
                let lister: any ObjectLister
                if let existing = self.lister {
                    lister = existing
                } else {
                    try ObjectKey.validatePrefix(request.options.prefix)
                    lister = try await provider.makeLister(request)
                    self.lister = lister
                }
                do {
                    guard let page = try await lister.nextPage() else {
                        finished = true
                        return nil
                    }
                    try Self.checkSizes(page, capabilities: provider.capabilities)
                    return page
                } catch {
                    finished = true
                    throw error
                }
            }
        }
    }
}
