import BuckiaCore
import Foundation

/// A ``StorageEngine`` that keeps one file per key in a directory: easy to inspect, back up
/// and debug, and cheap to open however many values it holds.
///
/// ```swift
/// let engine = try DiskStorageEngine(directory: StorageDirectory.caches(appendingPath: "Images").url)
/// try await engine.write(png, key: CacheKey(verbatim: "red-panda.png"))
/// let data = try await engine.read(key: CacheKey(verbatim: "red-panda.png"))
/// ```
///
/// ## Files
///
/// A value lives at `<directory>/<folder><name>`: `name` comes from ``DiskFileName`` (base32
/// of the key, or `~` and its SHA-256 when the key is long), `folder` from the engine's
/// ``StorageLayout`` (none for `flat`; `ab/` for `gitStyle`). The file holds a small header
/// (magic `BKV1`, the creation time, the key) and then the value's bytes. Writes are atomic:
/// the file is written under `<directory>/.tmp/`, synced (unless `durable` is false) and
/// renamed into place, so a reader sees the old value or the new one. Files in `.tmp`, names
/// starting with `.`, and any name the engine would not write (a `README`, an editor's
/// backup) are never listed or counted; a foreign file whose name happens to be a valid
/// base32 name is listed and reads as ``BuckiaError/Code/corrupt``.
///
/// ## Cost
///
/// Opening only creates the directory and `.tmp` and removes abandoned temporaries from `.tmp`
/// (``BuckiaCore/Temporaries``): no scan of the values, no index, so it costs the same
/// over ten values or a million. Reading, writing, removing and the timestamps of one key
/// compute its path and touch that one file. ``allKeys()``, ``keyCount()``, the `readAll`
/// variants and pagination walk the directory: their cost grows with the number of values
/// (and pagination sorts all names for each page), while their memory holds keys, not values.
///
/// `remove(key:)` leaves an emptied fan-out folder in place for the next write to reuse;
/// ``removeAllData()`` removes the value files, then every fan-out folder left empty. Files
/// the engine does not own stay where they are.
///
/// Configuration (engine type `disk`): `directory` (required); options `layout` (`flat`,
/// `git` — the default — or `fanout:N`) and `fsync` (`true` by default; `false` skips
/// `fsync`, trading durability against power loss for speed). Unknown options are ignored.
public actor DiskStorageEngine: PaginatedStorageEngine, StorageEnginePlugin {
    /// The type name configurations select this engine by: `disk`.
    public static let engineType: EngineType = .disk

    /// The folder, inside ``directory``, that holds files being written.
    public static let temporaryFolderName = ".tmp"

    /// The values survive reopening, and can be read a page at a time.
    public nonisolated let capabilities: Set<EngineCapability> = [.persistent, .pagination]

    /// The directory the values live in.
    public nonisolated let directory: URL
    /// How values are spread over subfolders.
    public nonisolated let layout: StorageLayout
    /// Whether each write is synced to stable storage before it returns.
    public nonisolated let durable: Bool

    /// ``directory``'s path, without a trailing slash.
    nonisolated let rootPath: String
    /// Where atomic writes put their temporary files (the same file system as the values).
    nonisolated let temporaryDirectory: URL
    /// The number of fan-out folder levels (0 for `flat`), as ``StorageLayout`` clamps it.
    nonisolated let fanOutDepth: Int
    let now: @Sendable () -> Date

    /// Opens (creating if needed) the engine over `directory`.
    ///
    /// Nothing in the directory is read: the values already there are found when asked for.
    ///
    /// - Parameters:
    ///   - directory: Where the values live; created with any missing parents.
    ///   - layout: How values are spread over subfolders. Keep it the same each time a
    ///     directory is opened: values written under another layout are not found.
    ///   - durable: Whether writes and removals are synced to stable storage.
    ///   - now: The clock for `createdAt` and `updatedAt`.
    /// - Throws: ``BuckiaError`` when the directory cannot be created: ``BuckiaError/Code/invalidPath``
    ///   when a file stands in the way, ``BuckiaError/Code/permissionDenied`` when its parent
    ///   is not writable.
    public init(
        directory: URL, layout: StorageLayout = .gitStyle, durable: Bool = true,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        var path = directory.standardizedFileURL.path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        try DiskFileSystem.createDirectory(path)
        let temporaryPath = (path == "/" ? "" : path) + "/" + DiskStorageEngine.temporaryFolderName
        try DiskFileSystem.createDirectory(temporaryPath)
        // Temporaries a killed writer left behind go now (a live writer's are locked).
        if let temporary = try? DirectoryHandle(path: temporaryPath) { Temporaries.sweep(temporary) }
        self.directory = URL(fileURLWithPath: path, isDirectory: true)
        self.rootPath = path == "/" ? "" : path
        self.temporaryDirectory = URL(fileURLWithPath: temporaryPath, isDirectory: true)
        self.layout = layout
        self.durable = durable
        self.now = now
        switch layout {
        case .flat: fanOutDepth = 0
        case .fanOut(let depth): fanOutDepth = max(1, min(depth, 4))
        }
    }

    /// Opens the engine a configuration describes (see the type's documentation for options).
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a missing directory, an unknown
    ///   layout or an `fsync` that is not `true` or `false`.
    public init(configuration: EngineConfiguration) async throws {
        let directory = try configuration.requireDirectory()
        let layout = try configuration.options["layout"].map { try StorageLayout(parsing: $0) } ?? .gitStyle
        var durable = true
        if let raw = configuration.options["fsync"] {
            guard let value = Bool(raw.lowercased()) else {
                throw BuckiaError(
                    .invalidConfiguration, "The disk engine's fsync option must be true or false; it is \(raw.debugDescription).",
                    path: "options.fsync")
            }
            durable = value
        }
        try self.init(directory: directory, layout: layout, durable: durable)
    }

    /// The file that holds (or would hold) the value for `key`.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` if the key is not valid.
    public nonisolated func fileURL(for key: CacheKey) throws -> URL {
        try key.validate()
        return URL(fileURLWithPath: try location(of: key).path, isDirectory: false)
    }

    /// Where a key's file is: its fan-out folder (relative, empty or ending in `/`), name and path.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidPath`` when a fan-out folder on the way is
    ///   a symbolic link: the engine never follows one out of its directory.
    nonisolated func location(of key: CacheKey) throws -> (folder: String, name: String, path: String) {
        let name = DiskFileName.fileName(for: key)
        let folder = layout.folder(for: name)
        var walked = rootPath
        for segment in folder.split(separator: "/") {
            walked += "/" + segment
            if let info = try DiskFileSystem.status(walked), (info.st_mode & S_IFMT) == S_IFLNK {
                throw BuckiaError(
                    .invalidPath, "The fan-out folder \(walked) is a symbolic link; the disk engine does not follow links out of its directory. Remove the link.",
                    operation: "locate", path: key.value)
            }
        }
        return (folder, name, rootPath + "/" + folder + name)
    }

    /// The absolute path of a relative fan-out folder, without a trailing slash.
    nonisolated func folderPath(_ folder: String) -> String {
        folder.isEmpty ? (rootPath.isEmpty ? "/" : rootPath) : rootPath + "/" + folder.dropLast()
    }
}
