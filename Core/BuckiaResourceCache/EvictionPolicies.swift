import Foundation

/// What an eviction policy knows about an entry: the index's row, never the file system's
/// access dates (unreliable, and a system call per hit).
public struct CacheEntryInfo: Sendable, Hashable {
    /// The entry's key in the index.
    public let key: String
    /// Bytes the entry's file holds.
    public let size: Int64
    /// When it was stored (or last replaced).
    public let storedAt: Date
    /// When it was last read (or stored), by the clock of the process that read it: for
    /// display and for policies about time; recency is ``accessOrder``.
    public let lastAccess: Date
    /// How many times it was read.
    public let hits: Int64
    /// The app's priority for it (higher is kept longer); 0 by default.
    public let priority: Int
    /// Pinned entries are never evicted.
    public let pinned: Bool
    /// When it was last used, as an order among all entries (higher: more recent) that the
    /// index assigns: unlike a time, it holds when a clock moves backwards or two processes'
    /// clocks disagree. What the LRU policy, and every policy's ties, go by.
    public let accessOrder: Int64

    public init(
        key: String, size: Int64, storedAt: Date, lastAccess: Date, hits: Int64, priority: Int = 0, pinned: Bool = false, accessOrder: Int64 = 0
    ) {
        (self.key, self.size, self.storedAt, self.lastAccess, self.hits, self.priority, self.pinned) = (key, size, storedAt, lastAccess, hits, priority, pinned)
        self.accessOrder = accessOrder
    }
}

/// Decides which entries go when the cache is over its limits: the seed's
/// `CacheEvictionPolicy`. Entries are evicted in ascending ``score(_:now:)`` order (ties: the
/// least recently used first, by ``CacheEntryInfo/accessOrder``, then by key) until the cache is
/// within its limits; pinned entries are never offered.
public protocol CacheEvictionPolicy: Sendable {
    /// A name for messages and statistics.
    var name: String { get }
    /// Lower goes first.
    func score(_ entry: CacheEntryInfo, now: Date) -> Double
}

/// Least recently used first (by the index's access order, never a clock): the default.
public struct LRUEvictionPolicy: CacheEvictionPolicy {
    public init() {}
    public var name: String { "lru" }
    public func score(_ entry: CacheEntryInfo, now: Date) -> Double { Double(entry.accessOrder) }
}

/// Least frequently used first; among equals, the least recently used.
public struct LFUEvictionPolicy: CacheEvictionPolicy {
    public init() {}
    public var name: String { "lfu" }
    public func score(_ entry: CacheEntryInfo, now: Date) -> Double { Double(entry.hits) }
}

/// Largest first: frees the most space with the fewest evictions.
public struct LargestFirstEvictionPolicy: CacheEvictionPolicy {
    public init() {}
    public var name: String { "size" }
    public func score(_ entry: CacheEntryInfo, now: Date) -> Double { -Double(entry.size) }
}

/// Oldest stored first, however often read.
public struct OldestFirstEvictionPolicy: CacheEvictionPolicy {
    public init() {}
    public var name: String { "age" }
    public func score(_ entry: CacheEntryInfo, now: Date) -> Double { entry.storedAt.timeIntervalSince1970 }
}

/// Lowest priority first; among equals, the least recently used.
public struct PriorityEvictionPolicy: CacheEvictionPolicy {
    public init() {}
    public var name: String { "priority" }
    public func score(_ entry: CacheEntryInfo, now: Date) -> Double { Double(entry.priority) }
}

/// A score of the app's own.
public struct CustomEvictionPolicy: CacheEvictionPolicy {
    public let name: String
    let scoring: @Sendable (CacheEntryInfo, Date) -> Double

    public init(name: String, score: @escaping @Sendable (CacheEntryInfo, Date) -> Double) {
        self.name = name
        self.scoring = score
    }

    public func score(_ entry: CacheEntryInfo, now: Date) -> Double { scoring(entry, now) }
}

extension CacheEvictionPolicy {
    /// The entries to evict from `entries` so that what stays is within `maxBytes` and
    /// `maxCount`, in the order they go: the policy's order, pinned entries never chosen. When
    /// the pinned entries alone exceed a limit, every unpinned entry goes and the limit is
    /// left exceeded (the caller reports it).
    public func victims(_ entries: [CacheEntryInfo], maxBytes: Int64?, maxCount: Int?, now: Date) -> [CacheEntryInfo] {
        var bytes = entries.reduce(Int64(0)) { $0 &+ $1.size }
        var count = entries.count
        func over() -> Bool { (maxBytes.map { bytes > $0 } ?? false) || (maxCount.map { count > $0 } ?? false) }
        guard over() else { return [] }
        // A score that is not a number goes first rather than break the order.
        let scored = entries.filter { !$0.pinned }.map { entry -> (CacheEntryInfo, Double) in
            let value = score(entry, now: now)
            return (entry, value.isNaN ? -.infinity : value)
        }
        let ordered = scored.sorted { a, b in
            if a.1 != b.1 { return a.1 < b.1 }
            if a.0.accessOrder != b.0.accessOrder { return a.0.accessOrder < b.0.accessOrder }
            return a.0.key.utf8.lexicographicallyPrecedes(b.0.key.utf8)
        }
        var chosen: [CacheEntryInfo] = []
        for (entry, _) in ordered {
            guard over() else { break }
            chosen.append(entry)
            bytes -= entry.size
            count -= 1
        }
        return chosen
    }
}
