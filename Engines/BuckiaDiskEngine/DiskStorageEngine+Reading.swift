import BuckiaCore
import Foundation

extension DiskStorageEngine {
    /// The value for `key`, or nil if there is none.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` for an invalid key,
    ///   ``BuckiaError/Code/corrupt`` (naming the key) when the file's header is damaged or
    ///   belongs to another key, and any I/O failure.
    public func read(key: CacheKey) async throws -> Data? {
        try key.validate()
        return try readValue(at: try location(of: key).path, key: key)
    }

    /// The keys of `keys` that exist, with their values, in the order of `keys`.
    public func readDataAndKeys(keys: [CacheKey]) async throws -> [(key: CacheKey, data: Data)] {
        for key in keys { try key.validate() }
        return try keys.compactMap { key in try readValue(at: try location(of: key).path, key: key).map { (key, $0) } }
    }

    /// Every key and value, in key order. Holds every value in memory: prefer pagination
    /// for large directories.
    public func readAllDataAndKeys() async throws -> [(key: CacheKey, data: Data)] {
        try sortedValueFiles().compactMap { file in try readValue(at: file.path, key: file.key).map { (file.key, $0) } }
    }

    /// Up to `limit` keys and values after `cursor`, in key order.
    ///
    /// Each page walks and sorts every name (memory: the keys), then reads only its own values.
    public func readDataAndKeys(after cursor: CacheKey?, limit: Int) async throws -> [(key: CacheKey, data: Data)] {
        guard limit > 0 else { return [] }
        var files = try valueFiles()
        if let cursor { files.removeAll { !(cursor < $0.key) } }
        files.sort { $0.key < $1.key }
        var page: [(key: CacheKey, data: Data)] = []
        for file in files {
            guard page.count < limit else { break }
            if let data = try readValue(at: file.path, key: file.key) { page.append((file.key, data)) }
        }
        return page
    }

    /// Whether a value file exists for `key` (its header is not read).
    public func keyExists(_ key: CacheKey) async throws -> Bool {
        try key.validate()
        return try DiskFileSystem.status(try location(of: key).path).map(DiskFileSystem.isRegularFile) ?? false
    }

    /// How many values are stored: a walk of the directory counting value file names, with
    /// no file opened.
    public func keyCount() async throws -> Int {
        var count = 0
        try walkValueFiles { _, _, _ in count += 1 }
        return count
    }

    /// Every key, in ascending UTF-8 byte order. Base32 names decode without opening the
    /// file; hashed names (long keys) have their header read.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` if a hashed file's header is damaged.
    public func allKeys() async throws -> [CacheKey] {
        try valueFiles().map(\.key).sorted()
    }

    /// When `key` was first written, from its file's header; nil if there is no value.
    public func createdAt(key: CacheKey) async throws -> Date? {
        try key.validate()
        let path = try location(of: key).path
        guard let header = try readHeader(at: path, subject: key.value) else { return nil }
        guard header.key.elementsEqual(key.value.utf8) else { throw misplaced(key) }
        return header.createdAt
    }

    /// When `key` was last written: its file's modification time; nil if there is no value.
    public func updatedAt(key: CacheKey) async throws -> Date? {
        try key.validate()
        guard let info = try DiskFileSystem.status(try location(of: key).path), DiskFileSystem.isRegularFile(info) else { return nil }
        return LocalFile.modificationDate(of: info)
    }

    // MARK: Files

    /// The value in the file at `path`, checked to belong to `key`; nil if the file is missing.
    func readValue(at path: String, key: CacheKey) throws -> Data? {
        guard let file = try openIfPresent(path) else { return nil }
        defer { try? file.close() }
        let size = try file.status().size
        let bytes = try file.read(count: Int(size), at: 0)
        let header = try DiskValueHeader(parsing: bytes, subject: key.value)
        guard header.key.elementsEqual(key.value.utf8) else { throw misplaced(key) }
        return try header.value(in: bytes, subject: key.value)
    }

    /// The header of the file at `path` (one `pread`), or nil if the file is missing.
    nonisolated func readHeader(at path: String, subject: String) throws -> DiskValueHeader? {
        guard let file = try openIfPresent(path) else { return nil }
        defer { try? file.close() }
        return try DiskValueHeader(parsing: file.read(count: DiskValueHeader.maximumLength, at: 0), subject: subject)
    }

    private nonisolated func openIfPresent(_ path: String) throws -> LocalFile? {
        do {
            return try LocalFile.openForReading(URL(fileURLWithPath: path, isDirectory: false))
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        }
    }

    func misplaced(_ key: CacheKey) -> BuckiaError {
        BuckiaError(
            .corrupt, "The file for this key holds another key's value; it was moved or damaged. Write the key again or remove it.",
            operation: "read", path: key.value)
    }
}
