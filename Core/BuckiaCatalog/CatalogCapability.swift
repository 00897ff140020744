import BuckiaCore
import BuckiaSQLite

/// What a file catalog can do beyond the operations every ``FileCatalogClient`` has: the
/// vocabulary the catalog conformance scenarios are selected by, so a catalog that lacks a
/// feature skips the scenarios that need it (reported as skipped, never as passed).
///
/// A third party names its own with a reverse-DNS prefix (`com.example.catalog.sharing`).
public struct CatalogCapability: CapabilityVocabulary {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Records survive the catalog being opened again on the same storage.
    public static let persistent: CatalogCapability = "persistent"
    /// ``FileQuery/search`` finds records by the words of their title, author and key.
    public static let fullTextSearch: CatalogCapability = "fullTextSearch"
    /// Catalogs opened on the same storage at once — in two processes, or twice in one — share
    /// it: what one writes, the other reads, and a live query on one sees the other's commits.
    public static let sharedStorage: CatalogCapability = "sharedStorage"

    public static let subject = "catalog"

    /// Every catalog capability Buckia defines.
    public static let known: Set<CatalogCapability> = [.persistent, .fullTextSearch, .sharedStorage]
}

extension FileCatalogClient {
    /// What ``live(path:configuration:)`` catalogs can do with the SQLite library this process
    /// has: always ``CatalogCapability/persistent`` and ``CatalogCapability/sharedStorage``,
    /// and ``CatalogCapability/fullTextSearch`` when SQLite was built with FTS5.
    public static func liveCapabilities() throws -> Set<CatalogCapability> {
        let probe = try SQLiteConnection(path: ":memory:")
        return try FileCatalogLive.hasFullTextSearch(probe) ? [.persistent, .sharedStorage, .fullTextSearch] : [.persistent, .sharedStorage]
    }

    /// What ``inMemory(configuration:)`` catalogs can do: search (by folded word prefixes),
    /// not persistence.
    public static let inMemoryCapabilities: Set<CatalogCapability> = [.fullTextSearch]
}
