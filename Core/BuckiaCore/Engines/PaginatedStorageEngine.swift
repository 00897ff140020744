import Foundation

/// How to page through an engine.
public struct PaginationOptions: Hashable, Sendable {
    /// The most items per page.
    public var limit: Int
    /// Start after this key (exclusive); nil starts at the first key.
    public var after: CacheKey?

    /// Creates pagination options.
    public init(limit: Int, after: CacheKey? = nil) {
        self.limit = limit
        self.after = after
    }
}

/// An engine that can read its values a page at a time, in key order.
///
/// Pagination is keyset-based: each page asks for the keys after the last key of the page
/// before, so a page costs the same at the start and at the end of a million keys, and writes
/// between pages never shift items into or out of view (as OFFSET paging would).
public protocol PaginatedStorageEngine: StorageEngine {
    /// Up to `limit` keys and values after `cursor` (exclusive), in ascending key order.
    func readDataAndKeys(after cursor: CacheKey?, limit: Int) async throws -> [(key: CacheKey, data: Data)]
}

extension PaginatedStorageEngine {
    /// The values, a page at a time.
    ///
    /// ```swift
    /// for try await page in engine.readData(options: PaginationOptions(limit: 50)) {
    ///     show(page)   // 50, 50, 1 for 101 values
    /// }
    /// ```
    public nonisolated func readData(options: PaginationOptions) -> PaginationSequence<Data> {
        PaginationSequence(options: options) { cursor, limit in
            let page = try await self.readDataAndKeys(after: cursor, limit: limit)
            return (page.map(\.data), page.last?.key)
        }
    }

    /// The keys and values, a page at a time.
    public nonisolated func readDataAndKeys(options: PaginationOptions) -> PaginationSequence<(key: CacheKey, data: Data)> {
        PaginationSequence(options: options) { cursor, limit in
            let page = try await self.readDataAndKeys(after: cursor, limit: limit)
            return (page, page.last?.key)
        }
    }
}

/// An `AsyncSequence` of pages from a ``PaginatedStorageEngine``; it ends after the first
/// short page.
public struct PaginationSequence<Item: Sendable>: AsyncSequence, Sendable {
    public typealias Element = [Item]
    typealias Fetch = @Sendable (_ cursor: CacheKey?, _ limit: Int) async throws -> ([Item], CacheKey?)

    let options: PaginationOptions
    let fetch: Fetch

    init(options: PaginationOptions, fetch: @escaping Fetch) {
        self.options = options
        self.fetch = fetch
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(cursor: options.after, limit: Swift.max(1, options.limit), fetch: fetch)
    }

    /// Fetches one page per call.
    public struct Iterator: AsyncIteratorProtocol {
        var cursor: CacheKey?
        let limit: Int
        let fetch: Fetch
        var finished = false

        public mutating func next() async throws -> [Item]? {
            guard !finished else { return nil }
            let (items, last) = try await fetch(cursor, limit)
            if items.count < limit { finished = true }
            guard !items.isEmpty else { return nil }
            cursor = last
            return items
        }
    }
}
