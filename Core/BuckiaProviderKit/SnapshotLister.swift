import BuckiaCore
import Foundation

/// A lister over entries known up front: an in-memory map, a flat folder read once, a
/// database query. It sorts them once and pages through them with a ``ListingFilter``.
///
/// Resume tokens name the last entry returned, so a listing resumed later starts right after
/// it even if entries were added or removed in between.
///
/// ```swift
/// public func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
///     try SnapshotLister(entries: objects.map { .object($0.file) }, request: request, maxPageSize: 1000)
/// }
/// ```
public actor SnapshotLister: ObjectLister {
    private let entries: [ListEntry]
    private var filter: ListingFilter
    private let pageSize: Int
    private var index = 0

    /// Prepares a listing of `entries` (in any order) for `request`.
    ///
    /// - Throws: As ``ListingFilter/init(_:)``.
    public init(entries: [ListEntry], request: ListRequest, maxPageSize: Int) throws {
        filter = try ListingFilter(request)
        let prefix = Array(request.options.prefix.utf8)
        self.entries = entries.filter { $0.sortBytes.starts(with: prefix) }.sortedByKeyBytes()
        pageSize = request.options.effectivePageSize(maximum: maxPageSize)
    }

    public func nextPage() async throws -> ListPage? {
        var page: [ListEntry] = []
        while index < entries.count, page.count < pageSize {
            if let entry = filter.admit(entries[index]) { page.append(entry) }
            index += 1
        }
        guard let last = page.last else { return nil }
        return ListPage(entries: page, resumeToken: ListingFilter.token(after: last))
    }
}

/// A lister for backends that page statelessly with a continuation token of their own (S3's
/// `NextContinuationToken`, B2's `nextFileName`): it keeps the token between pages and stops
/// when the backend returns none.
///
/// The resume token of a page is the backend's token for the next one.
public actor TokenPagedLister: ObjectLister {
    /// Fetches the page that starts at a backend token (nil for the first page) and returns
    /// its entries and the token of the next page.
    public typealias Fetch = @Sendable (_ token: String?) async throws -> (entries: [ListEntry], next: String?)

    private let fetch: Fetch
    private let what: String
    private var token: String?
    private var seen: Set<String> = []
    private var finished = false
    /// The greatest entry path listed so far, in key order.
    private var greatest: [UInt8]?
    /// Pages in a row that listed nothing past ``greatest`` yet promised more.
    private var stalledPages = 0

    /// How many pages in a row may bring no new entry before the listing is refused: a backend
    /// may return empty pages now and then (B2 behind a run of hidden files, which its lister
    /// leaves out; S3-compatible stores during some delimiter listings), but one that keeps
    /// handing out fresh tokens with nothing new would be followed forever. A thousand such
    /// pages is a million hidden names in a row at B2's page size, and under a minute of
    /// requests against a hostile server.
    public static let maximumStalledPages = 1_000

    /// Prepares a listing that starts at `request`'s resume token, if any.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` for a prefix no key can start with (`..`,
    ///   a leading `/`, an empty segment, NUL), before anything is asked of the backend.
    public init(request: ListRequest, fetch: @escaping Fetch) throws {
        try ObjectKey.validatePrefix(request.options.prefix)
        self.fetch = fetch
        token = request.resumeToken
        what = request.options.prefix
    }

    public func nextPage() async throws -> ListPage? {
        if finished { return nil }
        let (entries, next) = try await fetch(token)
        if let next {
            guard seen.insert(next).inserted else {
                throw BuckiaError(
                    .corrupt, "The provider returned a continuation token it had returned before; the listing would never end.",
                    operation: "list", path: what)
            }
        } else {
            finished = true
        }
        token = next
        // Progress: an entry past every entry listed before (backends list in key order).
        var progressed = false
        for entry in entries where greatest.map({ $0.lexicographicallyPrecedes(entry.sortBytes) }) ?? true {
            greatest = entry.sortBytes
            progressed = true
        }
        if progressed || finished {
            stalledPages = 0
        } else {
            stalledPages += 1
            if stalledPages >= Self.maximumStalledPages {
                throw BuckiaError(
                    .corrupt,
                    "The provider returned \(stalledPages) pages in a row with nothing new, each promising more; the listing would never end.",
                    operation: "list", path: what)
            }
        }
        if entries.isEmpty && finished { return nil }
        return ListPage(entries: entries, resumeToken: next)
    }
}
