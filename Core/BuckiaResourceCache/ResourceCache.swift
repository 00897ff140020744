import BuckiaCore
import Foundation

/// A resource as the cache hands it out.
public struct CachedResource: Sendable {
    /// The resource's bytes (processed, if a processor ran; never the transform's encoding).
    public let data: Data
    /// The stored file (in the transform's encoding).
    public let file: URL
    /// The entry's key.
    public let key: String
    /// What the origin said when it was stored.
    public let response: CachedResponse
    /// When it was stored.
    public let storedAt: Date
    /// Where the bytes came from.
    public let tier: Tier

    /// The cache tier a read was served from.
    public enum Tier: String, Sendable {
        case memory, disk
    }
}

/// What the cache holds.
public struct ResourceCacheStatistics: Sendable, Hashable, Codable {
    /// Entries on disk.
    public var entries: Int
    /// Bytes their files hold.
    public var bytes: Int64
    /// Pinned entries.
    public var pinned: Int
    /// Bytes held by the memory tier.
    public var memoryBytes: Int
    /// Entries in the memory tier.
    public var memoryEntries: Int
}

/// Resources kept on disk under one folder, indexed in SQLite, with a bounded memory tier
/// above: the store the downloader fills and reads.
///
/// Every write is atomic (a temporary file renamed into place), the index row committed after
/// the file is in place; a read checks the file against the SHA-256 recorded for it, so a
/// missing, truncated or altered file is a miss (its entry dropped) and never wrong bytes.
/// After every write the eviction policy brings the cache within its limits.
public final class ResourceCache: Sendable {
    /// The cache folder.
    public let folder: URL
    /// Its choices.
    public let configuration: ResourceCacheConfiguration
    let index: ResourceIndex
    let memory: Locked<MemoryTier>
    /// Reads not yet written to the index (see ``recordHit(_:at:)``).
    let pendingHits = Locked(PendingHits())
    let now: @Sendable () -> Date
    /// Where temporaries are written (in the folder, so the rename stays on one file system).
    let temporaries: URL
    /// This cache's own folder in ``temporaries`` for downloads, locked while it is open: a
    /// process killed mid-download leaves it unlocked, and the next opener removes it.
    let downloads: DownloadFolder
    /// Where the downloader's lock files are.
    let locks: URL

    /// The index's name in the cache's folder: a folder without it holds no cache.
    package static let indexName = ".buckia-index.sqlite"

    /// Opens (creating) the cache in `folder`.
    ///
    /// - Parameter clock: The time entries are stamped with; injected by tests.
    /// - Throws: ``BuckiaError/Code/corrupt`` for a damaged index, with the way back.
    public init(folder: URL, configuration: ResourceCacheConfiguration = ResourceCacheConfiguration(), clock: @escaping @Sendable () -> Date = { Date() }) throws {
        self.folder = folder
        self.configuration = configuration
        now = clock
        temporaries = folder.appendingPathComponent(".buckia-tmp", isDirectory: true)
        locks = folder.appendingPathComponent(".buckia-locks", isDirectory: true)
        // What a user fetched is theirs alone, as their secret store is: folders the cache makes
        // are 0700 and its index 0600 (a folder that exists keeps the mode its owner gave it).
        try Self.makePrivateFolder(folder)
        for made in [temporaries, locks] { try Self.makePrivateFolder(made) }
        let indexPath = folder.appendingPathComponent(Self.indexName).path
        do {
            // Empty: SQLite writes it, and gives its journal and WAL this mode.
            try LocalFile.createExclusive(URL(fileURLWithPath: indexPath), permissions: 0o600).close()
        } catch let error as BuckiaError where error.code == .alreadyExists {}
        index = try ResourceIndex(path: indexPath)
        memory = Locked(MemoryTier(limit: max(0, configuration.memoryBytes)))
        // What processes killed mid-write left (their temporaries are locked while they live).
        downloads = try DownloadFolder(in: temporaries)
    }

    /// Creates `folder` (and what is missing above it) with mode 0700, or checks that what is
    /// there is a folder.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` when a file, device or pipe is in its place.
    static func makePrivateFolder(_ folder: URL) throws {
        let path = folder.path
        if let mode = try LocalFile.existingMode(path) {
            guard (mode & S_IFMT) == S_IFDIR else {
                throw BuckiaError(
                    .invalidPath, "The resource cache folder \(path.debugDescription) is \(LocalFile.kind(of: mode)), not a folder; give a folder for the cache.",
                    operation: "open resource cache", path: path)
            }
            return
        }
        try LocalFile.createDirectories(folder.deletingLastPathComponent().path)
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw BuckiaError.posix(errno, operation: "create the resource cache folder", path: path) }
    }

    deinit {
        // Reads are advisory (recency for eviction): losing them when the index cannot be
        // written is no loss of data, and a deinit has no one to tell.
        do { try flushHits() } catch {}
    }

    /// Writes the reads not yet in the index and removes this cache's download folder: what
    /// releasing the cache does, for a process that exits (a command-line run) before every
    /// task holding the cache has been released. Downloads through the cache fail after it;
    /// reads and writes of entries go on.
    public func close() throws {
        downloads.remove()
        try flushHits()
    }

    /// A new path for a download into this cache (renamed into place by
    /// ``storeDownloaded(_:data:for:response:)``).
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` once the cache is closed.
    func downloadPath() throws -> URL {
        guard let folder = downloads.url else {
            throw BuckiaError(.invalidConfiguration, "The resource cache at \(self.folder.path) was closed; open it again to download into it.", operation: "fetch")
        }
        return folder.appendingPathComponent(UUID().uuidString)
    }

    // MARK: Keys and paths

    /// The entry key of `location`: the identifier rules, the processor, and the identifier.
    public func key(for location: ResourceLocation) throws -> String {
        let processor = activeProcessor(location)?.id ?? "original"
        return "\(configuration.identifierProvider.ruleName)|\(processor)|\(try identifier(location))"
    }

    func identifier(_ location: ResourceLocation) throws -> String {
        let identifier = try configuration.identifierProvider.identifier(for: location)
        guard !identifier.isEmpty, identifier.utf8.count <= 128, !identifier.contains("/"), !identifier.utf8.contains(0), identifier != ".", identifier != ".." else {
            throw BuckiaError(
                .invalidConfiguration, "The identifier provider gave \(identifier.prefix(40).debugDescription) for \(location); an identifier is a plain name of 1 to 128 bytes.",
                operation: "cache key")
        }
        return identifier
    }

    func activeProcessor(_ location: ResourceLocation) -> (any ResourceProcessor)? {
        guard let processor = configuration.processor, processor.shouldProcess(location) else { return nil }
        return processor
    }

    /// The checked relative path of an entry.
    func relativePath(_ location: ResourceLocation, storedAt: Date, size: Int64) throws -> String {
        var identifier = try identifier(location)
        if let processor = activeProcessor(location) {
            // The same resource processed two ways is two files.
            identifier = Hashing.sha256Hex(Data("\(identifier)|\(processor.id)".utf8)).prefix(32).description
        }
        let path = configuration.pathProvider.path(
            for: location, identifier: identifier, fileExtension: configuration.transform.fileExtension, storedAt: storedAt, size: size)
        _ = try ResourceNames.check(path)
        return path
    }

    // MARK: Writing

    /// Stores `data` (as downloaded) for `location`: processed, transformed, written atomically,
    /// indexed; then the cache is trimmed to its limits. `metadata`, `pinned` and `priority`
    /// default to what the entry had (none, unpinned, 0 for a new one); metadata given
    /// replaces the entry's whole.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` when one resource is larger than the
    ///   cache's byte limit (nothing is stored); what the file system reports (a full disk),
    ///   with the cache as it was.
    @discardableResult
    public func store(
        _ data: Data, for location: ResourceLocation, response: CachedResponse = CachedResponse(), metadata: [String: String]? = nil, pinned: Bool? = nil,
        priority: Int? = nil
    ) throws -> CachedResource {
        try store(data, from: nil, for: location, response: response, metadata: metadata, pinned: pinned, priority: priority)
    }

    /// Stores a downloaded file, `download` (from ``downloadPath()``), whose bytes are `data`:
    /// renamed into place when neither a processor nor a transform changes the bytes (no
    /// second copy written), else as ``store(_:for:response:metadata:pinned:priority:)``.
    func storeDownloaded(_ download: URL, data: Data, for location: ResourceLocation, response: CachedResponse) throws -> CachedResource {
        try store(data, from: download, for: location, response: response, metadata: nil, pinned: nil, priority: nil)
    }

    func store(
        _ data: Data, from download: URL?, for location: ResourceLocation, response: CachedResponse, metadata: [String: String]?, pinned: Bool?,
        priority: Int?
    ) throws -> CachedResource {
        let stamp = now()
        let key = try key(for: location)
        let processor = activeProcessor(location)
        let processed = try processor.map { try $0.process(data, for: location) } ?? data
        let unchanged = processor == nil && configuration.transform is IdentityTransform
        let encoded = unchanged ? processed : try configuration.transform.encode(processed)
        if let limit = configuration.resourceLimit, Int64(encoded.count) > limit {
            throw BuckiaError(
                .invalidConfiguration,
                "\(location) is \(encoded.count) bytes stored, more than the \(limit) bytes one resource may take (maxResourceBytes, else the cache's whole maxBytes); it was not cached.",
                operation: "store in cache")
        }
        let path = try relativePath(location, storedAt: stamp, size: Int64(encoded.count))
        let file = folder.appendingPathComponent(path)
        // A resource stored again (downloaded anew) keeps its pin and priority unless told.
        let previous = try index.entry(key)
        // Metadata goes with the entry: what the caller gives, else what the entry had (a
        // download refreshing the bytes passes none). Read before the old file is replaced
        // (an extended attribute goes with it).
        var keptMetadata = metadata
        if keptMetadata == nil, let provider = configuration.metadataProvider, let previous {
            keptMetadata = try Self.loadMetadata(provider, key: key, file: folder.appendingPathComponent(previous.path))
        }
        // Atomic: a temporary (or the download itself) renamed into place, flushed first when
        // `durableWrites`; every read also checks the bytes against the SHA-256 recorded here.
        let options = AtomicFile.Options(temporaryDirectory: temporaries, durable: configuration.durableWrites, createParentDirectories: true)
        if let download, unchanged {
            try AtomicFile.place(download, at: file, options: options)
        } else {
            try AtomicFile.write(encoded, to: file, options: options)
        }
        let contentHash = Hashing.sha256Hex(encoded)
        let entry = IndexRow(
            key: key, location: location.text, path: path, contentHash: contentHash, size: Int64(encoded.count),
            originalSize: Int64(data.count), transform: configuration.transform.name, processor: activeProcessor(location)?.id ?? "original",
            response: response, storedAt: stamp, lastAccess: stamp, hits: previous?.hits ?? 0, pinned: pinned ?? previous?.pinned ?? false,
            priority: priority ?? previous?.priority ?? 0)
        // Reads made before this store come before it in the access order.
        try flushHits()
        let replaced = try index.put(entry)
        if let replaced { try removeFile(replaced, key: key) }
        // Saved after the old file's metadata is cleared: a provider keyed by the entry's key
        // (SQLite) would otherwise lose it when the entry's file moves.
        if let keptMetadata, let provider = configuration.metadataProvider { try provider.save(keptMetadata, key: key, file: file) }
        memory.withLock { $0.put(key, processed, contentHash: contentHash) }
        try trim()
        return CachedResource(data: processed, file: file, key: key, response: response, storedAt: stamp, tier: .disk)
    }

    /// Refreshes what the origin said about a stored entry (a 304's new headers) without
    /// rewriting its bytes; false when there is no entry.
    @discardableResult
    public func updateResponse(_ response: CachedResponse, for location: ResourceLocation) throws -> Bool {
        guard var entry = try index.entry(key(for: location)) else { return false }
        entry.response = response
        _ = try index.put(entry)
        return true
    }

    // MARK: Reading

    /// The cached resource at `location`, or nil (a miss), whatever its freshness (the
    /// downloader decides that from ``CachedResource/response``).
    ///
    /// A file that is missing, or whose bytes do not match the SHA-256 recorded when it was
    /// stored, or that its transform cannot decode, is a miss: the entry is dropped, and the
    /// next fetch downloads the resource again.
    public func lookup(_ location: ResourceLocation) throws -> CachedResource? {
        try lookup(location, memoryOnly: false)
    }

    /// ``lookup(_:)`` from the memory tier only (one index query, no file read): nil when the
    /// entry's bytes are not in memory. What the downloader does on the calling thread before
    /// it hands a disk read to a blocking-work thread.
    func lookupInMemory(_ location: ResourceLocation) throws -> CachedResource? {
        try lookup(location, memoryOnly: true)
    }

    func lookup(_ location: ResourceLocation, memoryOnly: Bool) throws -> CachedResource? {
        let key = try key(for: location)
        guard let entry = try index.entry(key) else {
            memory.withLock { $0.remove(key) }
            return nil
        }
        let file = folder.appendingPathComponent(entry.path)
        let stamp = now()
        // Only the bytes the row names: another process may have replaced the entry since
        // this one kept it in memory.
        if let data = memory.withLock({ $0.get(key, contentHash: entry.contentHash) }) {
            try recordHit(key, at: stamp)
            return CachedResource(data: data, file: file, key: key, response: entry.response, storedAt: entry.storedAt, tier: .memory)
        }
        guard !memoryOnly else { return nil }
        guard let stored = try readVerified(file, entry) else {
            try drop(entry)
            return nil
        }
        let data: Data
        do {
            data = try decoder(for: entry).decode(stored)
        } catch {
            try drop(entry)
            return nil
        }
        try recordHit(key, at: stamp)
        memory.withLock { $0.put(key, data, contentHash: entry.contentHash) }
        return CachedResource(data: data, file: file, key: key, response: entry.response, storedAt: entry.storedAt, tier: .disk)
    }

    func decoder(for entry: IndexRow) throws -> any ResourceTransform {
        let transform = configuration.transform
        guard transform.name == entry.transform else {
            switch entry.transform {
            case IdentityTransform().name: return IdentityTransform()
            case ZlibTransform().name: return ZlibTransform()
            case AdaptiveTransform().name: return AdaptiveTransform()
            default:
                throw BuckiaError(.unsupported, "The entry was stored by the transform \(entry.transform), which this cache is not configured with.", operation: "read cache")
            }
        }
        return transform
    }

    /// The file's bytes if they are the ones recorded, or nil.
    func readVerified(_ file: URL, _ entry: IndexRow) throws -> Data? {
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch CocoaError.fileReadNoSuchFile {
            return nil
        }
        guard Int64(data.count) == entry.size, Hashing.sha256Hex(data) == entry.contentHash else { return nil }
        return data
    }

    // MARK: Removing

    /// What `provider` holds for an entry; metadata it cannot read (a damaged sidecar) is
    /// none, as a damaged file is a miss.
    static func loadMetadata(_ provider: any ResourceMetadataProvider, key: String, file: URL) throws -> [String: String]? {
        do {
            return try provider.load(key: key, file: file)
        } catch let error as BuckiaError where error.code == .corrupt {
            return nil
        }
    }

    /// The metadata saved with the entry of `location` by the configured provider, or nil.
    public func metadata(for location: ResourceLocation) throws -> [String: String]? {
        guard let provider = configuration.metadataProvider, let entry = try index.entry(key(for: location)) else { return nil }
        return try provider.load(key: entry.key, file: folder.appendingPathComponent(entry.path))
    }

    /// Removes the entry of `location`; false when there was none.
    @discardableResult
    public func remove(_ location: ResourceLocation) throws -> Bool {
        guard let entry = try index.entry(key(for: location)) else { return false }
        try drop(entry)
        return true
    }

    /// Pins (or unpins) the entry of `location`: a pinned entry is never evicted. False when
    /// there is no entry.
    @discardableResult
    public func pin(_ location: ResourceLocation, _ pinned: Bool = true) throws -> Bool {
        try index.setPinned(key(for: location), pinned)
    }

    /// Evicts entries in the policy's order, once the cache is over a limit, until it is a
    /// tenth below it (`maxBytes - maxBytes / 10`, likewise for `maxCount`), so that a full
    /// cache reads its index once per many stores rather than at every one; returns those
    /// evicted. Pinned entries stay, even over a limit.
    @discardableResult
    public func trim() throws -> [CacheEntryInfo] {
        // The totals first (one row the index's triggers keep): within the limits, no entry
        // is read.
        let (bytes, count) = try index.totals()
        let over = (configuration.maxBytes.map { bytes > $0 } ?? false) || (configuration.maxCount.map { count > $0 } ?? false)
        guard over else { return [] }
        // The policy sees every read this process made.
        try flushHits()
        let entries = try index.entries()
        let victims = Self.victims(entries.map(\.info), configuration: configuration, now: now())
        guard !victims.isEmpty else { return [] }
        let byKey = Dictionary(entries.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        // The index first: an entry whose file is gone but whose row stayed would be a miss
        // anyway; a file without a row would be orphaned.
        try index.remove(victims.map(\.key))
        for victim in victims {
            memory.withLock { $0.remove(victim.key) }
            if let entry = byKey[victim.key] { try removeFile(entry.path, key: entry.key) }
        }
        return victims
    }

    /// The entries a trim evicts: those the policy picks to bring the cache within its
    /// limits, then more of those left, in its order, until a tenth below them, sparing the
    /// one used last (the one just stored): a resource nearly as large as the cache is kept
    /// alone rather than evicted with the rest.
    static func victims(_ infos: [CacheEntryInfo], configuration: ResourceCacheConfiguration, now: Date) -> [CacheEntryInfo] {
        let policy = configuration.evictionPolicy
        let needed = policy.victims(infos, maxBytes: configuration.maxBytes, maxCount: configuration.maxCount, now: now)
        guard !needed.isEmpty else { return [] }
        let chosen = Set(needed.map(\.key))
        let remaining = infos.filter { !chosen.contains($0.key) }
        let newest = remaining.max { $0.accessOrder < $1.accessOrder }?.key
        let spared = remaining.map { info in
            info.key != newest ? info
                : CacheEntryInfo(
                    key: info.key, size: info.size, storedAt: info.storedAt, lastAccess: info.lastAccess, hits: info.hits, priority: info.priority, pinned: true,
                    accessOrder: info.accessOrder)
        }
        let further = policy.victims(
            spared, maxBytes: configuration.maxBytes.map { $0 - $0 / 10 }, maxCount: configuration.maxCount.map { $0 - $0 / 10 }, now: now)
        return needed + further
    }

    /// Removes every entry, pinned or not.
    public func clear() throws {
        pendingHits.withLock { $0 = PendingHits() }
        let entries = try index.entries()
        try index.removeAll()
        memory.withLock { $0 = MemoryTier(limit: $0.limit) }
        for entry in entries { try removeFile(entry.path, key: entry.key) }
    }

    /// What the cache holds.
    public func statistics() throws -> ResourceCacheStatistics {
        try flushHits()
        let entries = try index.entries()
        let (bytes, count) = memory.withLock { ($0.bytes, $0.count) }
        return ResourceCacheStatistics(
            entries: entries.count, bytes: entries.reduce(0) { $0 + $1.size }, pinned: entries.filter(\.pinned).count, memoryBytes: bytes, memoryEntries: count)
    }

    /// Records a read: kept in memory and written to the index (hits, last access, access
    /// order) with up to ``PendingHits/batch`` others in one transaction, or before the
    /// policy reads the index, or when the cache is released. A read costs no disk write; a
    /// crash forgets at most one batch of recency, never an entry.
    func recordHit(_ key: String, at date: Date) throws {
        let full = pendingHits.withLock { pending -> [(key: String, count: Int64, at: Date)]? in
            pending.add(key, at: date)
            return pending.count >= PendingHits.batch ? pending.take() : nil
        }
        if let full { try index.recordHits(full) }
    }

    /// Writes the reads not yet in the index.
    func flushHits() throws {
        let hits = pendingHits.withLock { $0.take() }
        try index.recordHits(hits)
    }

    func drop(_ entry: IndexRow) throws {
        try index.remove([entry.key])
        memory.withLock { $0.remove(entry.key) }
        try removeFile(entry.path, key: entry.key)
    }

    /// Removes an entry's file (and its metadata); nothing there is fine.
    func removeFile(_ path: String, key: String) throws {
        let file = folder.appendingPathComponent(path)
        if let metadata = configuration.metadataProvider { try metadata.clear(key: key, file: file) }
        do {
            try FileManager.default.removeItem(at: file)
        } catch CocoaError.fileNoSuchFile {
            return
        }
    }
}

/// A cache's own temporary folder for downloads, locked while it exists (the lock goes with
/// the process, however it ends), removed when the cache is released. Made after sweeping
/// away what killed processes left.
final class DownloadFolder: Sendable {
    private let parent: DirectoryHandle
    private let name: String
    private let handle: DirectoryHandle
    private let removed = Locked(false)
    private let path: URL

    init(in temporaries: URL) throws {
        parent = try DirectoryHandle(path: temporaries.path)
        // Temporaries and download folders whose writer is gone: their locks died with it.
        Temporaries.sweep(parent)
        (name, handle) = try parent.createTemporaryFolder()
        path = URL(fileURLWithPath: handle.path, isDirectory: true)
    }

    /// The folder; nil once removed.
    var url: URL? { removed.withLock { $0 } ? nil : path }

    /// Removes the folder (once).
    func remove() {
        guard !removed.withLock({ value in defer { value = true }; return value }) else { return }
        // Left behind if this fails: unlocked once this process ends, the next opener's sweep
        // takes it.
        do { try parent.removeTree(name) } catch {}
        Temporaries.unregister(handle.path)
    }

    deinit { remove() }
}

/// Reads not yet written to the index, in the order they happened.
struct PendingHits: Sendable {
    /// Reads kept before they are written in one transaction.
    static let batch = 64
    private var hits: [String: (count: Int64, at: Date, tick: UInt64)] = [:]
    private var tick: UInt64 = 0
    /// Reads kept (of one entry or many).
    private(set) var count = 0

    mutating func add(_ key: String, at date: Date) {
        tick &+= 1
        count += 1
        hits[key] = ((hits[key]?.count ?? 0) + 1, date, tick)
    }

    /// The reads, least recent first; none are left.
    mutating func take() -> [(key: String, count: Int64, at: Date)] {
        defer {
            hits.removeAll()
            count = 0
        }
        return hits.sorted { $0.value.tick < $1.value.tick }.map { ($0.key, $0.value.count, $0.value.at) }
    }
}

/// The memory tier: the most recently used resources' bytes, within a byte limit, each with
/// the SHA-256 of the stored file it came from, so bytes an entry no longer names are never
/// handed out.
struct MemoryTier: Sendable {
    let limit: Int
    private var items: [String: (data: Data, contentHash: String, tick: UInt64)] = [:]
    private var tick: UInt64 = 0
    private(set) var bytes = 0
    var count: Int { items.count }

    init(limit: Int) {
        self.limit = limit
    }

    /// The bytes kept for `key` if they are those of the stored file `contentHash` names;
    /// other bytes are dropped.
    mutating func get(_ key: String, contentHash: String) -> Data? {
        guard let item = items[key] else { return nil }
        guard item.contentHash == contentHash else {
            remove(key)
            return nil
        }
        tick &+= 1
        items[key] = (item.data, item.contentHash, tick)
        return item.data
    }

    mutating func put(_ key: String, _ data: Data, contentHash: String) {
        remove(key)
        guard data.count <= limit else { return }
        tick &+= 1
        items[key] = (data, contentHash, tick)
        bytes += data.count
        while bytes > limit, let oldest = items.min(by: { $0.value.tick < $1.value.tick }) {
            remove(oldest.key)
        }
    }

    mutating func remove(_ key: String) {
        if let item = items.removeValue(forKey: key) { bytes -= item.data.count }
    }
}
