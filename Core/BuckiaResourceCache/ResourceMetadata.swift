import BuckiaCore
import BuckiaSQLite
import CXattr
import Foundation

/// Where an entry's metadata (download date, source, tags: whatever the app records) is kept:
/// the seed's `ResourceMetadataProvider`, with text values so every store can hold them.
public protocol ResourceMetadataProvider: Sendable {
    /// Saves `metadata` for the entry `key`, whose file is `file`.
    func save(_ metadata: [String: String], key: String, file: URL) throws
    /// The entry's metadata, or nil when none was saved.
    func load(key: String, file: URL) throws -> [String: String]?
    /// Forgets the entry's metadata (the entry is going).
    func clear(key: String, file: URL) throws
}

/// A JSON file beside each entry's file (`{file}.json`), written atomically.
public struct JSONSidecarMetadataProvider: ResourceMetadataProvider {
    public init() {}

    static func sidecar(_ file: URL) -> URL { URL(fileURLWithPath: file.path + ".json") }

    public func save(_ metadata: [String: String], key: String, file: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(try encoder.encode(metadata), to: Self.sidecar(file), options: AtomicFile.Options(durable: false))
    }

    public func load(key: String, file: URL) throws -> [String: String]? {
        let data: Data
        do {
            data = try Data(contentsOf: Self.sidecar(file))
        } catch CocoaError.fileReadNoSuchFile {
            return nil
        }
        do {
            return try JSONDecoder().decode([String: String].self, from: data)
        } catch {
            throw BuckiaError(.corrupt, "The metadata file \(Self.sidecar(file).path) is not a JSON object of strings (\(error)); remove it.", operation: "read cache metadata")
        }
    }

    public func clear(key: String, file: URL) throws {
        do {
            try FileManager.default.removeItem(at: Self.sidecar(file))
        } catch CocoaError.fileNoSuchFile {
            return
        }
    }
}

/// An extended attribute on each entry's file (`user.buckia.metadata`, JSON). Needs a file
/// system with user attributes (ext4, XFS, btrfs, tmpfs since Linux 6.6, APFS).
public struct ExtendedAttributeMetadataProvider: ResourceMetadataProvider {
    public static let attribute = "user.buckia.metadata"

    public init() {}

    static func failure(_ action: String, _ file: URL, code: Int32 = errno) -> BuckiaError {
        let reason = String(cString: strerror(code))
        if code == ENOTSUP || code == EOPNOTSUPP {
            return BuckiaError(
                .unsupported, "The file system of \(file.path) keeps no extended attributes (\(reason)); choose the JSON sidecar or SQLite metadata provider.",
                operation: action)
        }
        return BuckiaError(.io, "Could not \(action) on \(file.path): \(reason).", operation: action)
    }

    public func save(_ metadata: [String: String], key: String, file: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(metadata)
        let result = data.withUnsafeBytes { buffer in
            buckia_setxattr(file.path, Self.attribute, buffer.baseAddress, buffer.count)
        }
        guard result == 0 else { throw Self.failure("set an extended attribute", file) }
    }

    public func load(key: String, file: URL) throws -> [String: String]? {
        let size = buckia_getxattr(file.path, Self.attribute, nil, 0)
        if size < 0 {
            if errno == buckia_no_attribute { return nil }
            throw Self.failure("read an extended attribute", file)
        }
        var data = Data(count: size)
        let read = data.withUnsafeMutableBytes { buffer in buckia_getxattr(file.path, Self.attribute, buffer.baseAddress, buffer.count) }
        guard read >= 0 else { throw Self.failure("read an extended attribute", file) }
        do {
            return try JSONDecoder().decode([String: String].self, from: data.prefix(read))
        } catch {
            throw BuckiaError(.corrupt, "The metadata attribute of \(file.path) is not a JSON object of strings.", operation: "read cache metadata")
        }
    }

    public func clear(key: String, file: URL) throws {
        guard buckia_removexattr(file.path, Self.attribute) != 0 else { return }
        let code = errno
        if code == buckia_no_attribute || code == ENOENT { return }
        // A link keeps no user attributes (xattr(7)): a file replaced by one has none to clear.
        var info = stat()
        if code == EPERM, lstat(file.path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK { return }
        throw Self.failure("remove an extended attribute", file, code: code)
    }
}

/// A SQLite table of its own (`key`, JSON), in the file at `path`: metadata an app can query.
public final class SQLiteMetadataProvider: ResourceMetadataProvider {
    private let database: SQLiteDatabase

    /// Opens (creating) the metadata database at `path`.
    public init(path: String) throws {
        let db = try SQLiteConnection(path: path)
        _ = try db.setJournalMode(.wal)
        try db.execute("CREATE TABLE IF NOT EXISTS resource_metadata (key TEXT PRIMARY KEY, json TEXT NOT NULL)")
        database = SQLiteDatabase(db)
    }

    public func save(_ metadata: [String: String], key: String, file: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(metadata), as: UTF8.self)
        try database.withConnection {
            try $0.run("INSERT INTO resource_metadata (key, json) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET json = excluded.json", [.text(key), .text(json)])
        }
    }

    public func load(key: String, file: URL) throws -> [String: String]? {
        let rows = try database.withConnection { try $0.query("SELECT json FROM resource_metadata WHERE key = ?1", [.text(key)]) { $0.string(0) ?? "" } }
        guard let json = rows.first else { return nil }
        do {
            return try JSONDecoder().decode([String: String].self, from: Data(json.utf8))
        } catch {
            throw BuckiaError(.corrupt, "The metadata of \(key) in the metadata database is not a JSON object of strings.", operation: "read cache metadata")
        }
    }

    public func clear(key: String, file: URL) throws {
        try database.withConnection { try $0.run("DELETE FROM resource_metadata WHERE key = ?1", [.text(key)]) }
    }
}
