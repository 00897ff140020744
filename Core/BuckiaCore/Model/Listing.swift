/// One entry of a listing: an object, or a folder when listing one level.
public enum ListEntry: Hashable, Sendable {
    /// A stored object.
    case object(RemoteFile)
    /// A common prefix ending in `/`, returned instead of the objects under it when listing
    /// one level.
    case directory(String)

    /// The entry's key or prefix.
    public var path: String {
        switch self {
        case .object(let file): file.path
        case .directory(let prefix): prefix
        }
    }

    /// The object, when this entry is one.
    public var file: RemoteFile? {
        if case .object(let file) = self { return file }
        return nil
    }
}

/// What to list.
public struct ListOptions: Hashable, Sendable {
    /// Only keys starting with this string. It is a string prefix, not a folder:
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
}

/// A request for one page of a listing.
public struct ListRequest: Hashable, Sendable {
    /// What to list.
    public var options: ListOptions
    /// The token the previous page returned, or nil for the first page.
    public var continuation: String?

    /// Creates a page request.
    public init(options: ListOptions, continuation: String? = nil) {
        self.options = options
        self.continuation = continuation
    }
}

/// One page of a listing, in UTF-8 byte order of the entries' paths.
public struct ListPage: Hashable, Sendable {
    /// The entries of this page.
    public var entries: [ListEntry]
    /// The token that fetches the next page, or nil when this is the last one.
    public var continuation: String?

    /// Creates a page.
    public init(entries: [ListEntry], continuation: String?) {
        self.entries = entries
        self.continuation = continuation
    }
}

/// A listing that fetches pages only as they are consumed.
///
/// Memory is bounded by one page, however many objects the listing covers.
///
/// ```swift
/// for try await entry in provider.list(ListOptions(prefix: "photos/")) {
///     print(entry.path)
/// }
/// ```
public struct RemoteListing: AsyncSequence, Sendable {
    public typealias Element = ListEntry

    let provider: any StorageProvider
    let options: ListOptions

    /// The listing's pages, for callers that want to work page by page.
    public var pages: Pages { Pages(provider: provider, options: options) }

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
        let options: ListOptions

        public func makeAsyncIterator() -> Iterator {
            Iterator(provider: provider, options: options)
        }

        /// Fetches one page per call until the provider returns no continuation.
        public struct Iterator: AsyncIteratorProtocol {
            let provider: any StorageProvider
            let options: ListOptions
            var continuation: String?
            var finished = false

            init(provider: any StorageProvider, options: ListOptions) {
                self.provider = provider
                self.options = options
            }

            public mutating func next() async throws -> ListPage? {
                if finished { return nil }
                try Task.checkCancellation()
                let page = try await provider.listPage(ListRequest(options: options, continuation: continuation))
                if let next = page.continuation {
                    guard next != continuation else {
                        throw BuckiaError(
                            .corrupt, "The provider returned the same continuation token twice; the listing would never end.",
                            operation: "list", path: options.prefix)
                    }
                    continuation = next
                } else {
                    finished = true
                }
                return page
            }
        }
    }
}
