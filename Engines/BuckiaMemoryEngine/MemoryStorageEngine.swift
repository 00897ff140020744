import BuckiaCore
import Foundation

/// A ``StorageEngine`` over a dictionary: the executable specification of the engine contract.
///
/// Nothing survives the process, so it does not claim ``EngineCapability/persistent``.
public actor MemoryStorageEngine: PaginatedStorageEngine, StorageEnginePlugin {
    public static let engineType: EngineType = .memory

    private struct Entry {
        var data: Data
        var createdAt: Date
        var updatedAt: Date
    }

    private var entries: [CacheKey: Entry] = [:]
    private let now: @Sendable () -> Date

    public nonisolated let capabilities: Set<EngineCapability> = [.pagination]

    /// Creates an empty engine.
    public init(configuration: EngineConfiguration) async throws {
        self.init()
    }

    /// Creates an empty engine with an injected clock.
    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    public func write(_ data: Data, key: CacheKey) async throws {
        try key.validate()
        store(data, key)
    }

    private func store(_ data: Data, _ key: CacheKey) {
        let time = now()
        if var entry = entries[key] {
            entry.data = data
            entry.updatedAt = time
            entries[key] = entry
        } else {
            entries[key] = Entry(data: data, createdAt: time, updatedAt: time)
        }
    }

    public func write(_ dataAndKeys: [(key: CacheKey, data: Data)]) async throws {
        // Validate everything first, so a bad key leaves the batch unwritten.
        for (key, _) in dataAndKeys { try key.validate() }
        for (key, data) in dataAndKeys { store(data, key) }
    }

    public func read(key: CacheKey) async -> Data? { entries[key]?.data }

    public func readDataAndKeys(keys: [CacheKey]) async -> [(key: CacheKey, data: Data)] {
        keys.compactMap { key in entries[key].map { (key, $0.data) } }
    }

    public func readAllDataAndKeys() async -> [(key: CacheKey, data: Data)] {
        entries.sorted { $0.key < $1.key }.map { ($0.key, $0.value.data) }
    }

    public func readDataAndKeys(after cursor: CacheKey?, limit: Int) async -> [(key: CacheKey, data: Data)] {
        let keys = entries.keys.filter { key in cursor.map { $0 < key } ?? true }.sorted().prefix(limit)
        return keys.compactMap { key in entries[key].map { (key, $0.data) } }
    }

    public func remove(key: CacheKey) async { entries[key] = nil }

    public func remove(keys: [CacheKey]) async {
        for key in keys { entries[key] = nil }
    }

    public func removeAllData() async { entries.removeAll() }

    public func keyExists(_ key: CacheKey) async -> Bool { entries[key] != nil }

    public func keyCount() async -> Int { entries.count }

    public func allKeys() async -> [CacheKey] { entries.keys.sorted() }

    public func createdAt(key: CacheKey) async -> Date? { entries[key]?.createdAt }

    public func updatedAt(key: CacheKey) async -> Date? { entries[key]?.updatedAt }
}
