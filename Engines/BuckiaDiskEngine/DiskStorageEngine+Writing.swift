import BuckiaCore
import Foundation

extension DiskStorageEngine {
    /// Stores `data` under `key` atomically, keeping the first write's `createdAt`.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` for an invalid key (nothing is written),
    ///   or the I/O failure, with any previous value left in place.
    public func write(_ data: Data, key: CacheKey) async throws {
        try key.validate()
        try await BlockingWork.run("write") { [self] in
            var touched: Set<String> = []
            try writeValue(data, key: key, touched: &touched)
            try syncFolders(touched)
        }
    }

    /// Stores many values. Every key is validated first, so one bad key leaves the whole batch
    /// unwritten; after that each value is written atomically on its own (a crash part-way
    /// leaves some values written), and each touched folder is synced once at the end.
    public func write(_ dataAndKeys: [(key: CacheKey, data: Data)]) async throws {
        for (key, _) in dataAndKeys { try key.validate() }
        try await BlockingWork.run("write") { [self] in
            var touched: Set<String> = []
            for (key, data) in dataAndKeys { try writeValue(data, key: key, touched: &touched) }
            try syncFolders(touched)
        }
    }

    /// Removes the value for `key`; a missing key succeeds. An emptied fan-out folder stays.
    public func remove(key: CacheKey) async throws {
        try key.validate()
        try await BlockingWork.run("remove") { [self] in
            var touched: Set<String> = []
            try removeValue(key, touched: &touched)
            try syncFolders(touched)
        }
    }

    /// Removes the values for `keys`, validating every key first.
    public func remove(keys: [CacheKey]) async throws {
        for key in keys { try key.validate() }
        try await BlockingWork.run("remove") { [self] in
            var touched: Set<String> = []
            for key in keys { try removeValue(key, touched: &touched) }
            try syncFolders(touched)
        }
    }

    /// Removes every value file and the fan-out folders left empty. The directory, `.tmp`
    /// (another engine may be writing through it) and files the engine does not own stay.
    public func removeAllData() async throws {
        try await BlockingWork.run("remove") { [self] in try removeAllValues() }
    }

    private nonisolated func removeAllValues() throws {
        var touched: Set<String> = []
        var folders: [String] = []
        try walkValueFiles(
            { folder, name, _ in
                if try DiskFileSystem.removeFile(rootPath + "/" + folder + name), durable { touched.insert(folderPath(folder)) }
            },
            visitFolder: { folders.append($0) })
        // Folders arrive after their contents, so children are removed before their parents.
        for folder in folders { DiskFileSystem.removeDirectoryIfEmpty(folderPath(folder)) }
        if durable && !folders.isEmpty { touched.insert(folderPath("")) }
        try syncFolders(touched)
    }

    // MARK: Files

    /// Writes one value file; adds its folder to `touched` when it must be synced.
    ///
    /// The file is synced inside the write (before the rename) and its folder afterwards by
    /// the caller, so a batch syncs each folder once instead of once per value.
    private nonisolated func writeValue(_ data: Data, key: CacheKey, touched: inout Set<String>) throws {
        let location = try location(of: key)
        let time = now()
        let createdAt = try existingCreatedAt(at: location.path, key: key) ?? time
        if !location.folder.isEmpty {
            try DiskFileSystem.createDirectory(folderPath(location.folder), syncParent: durable)
        }
        let header = DiskValueHeader(createdAt: createdAt, key: Array(key.value.utf8), value: data).encoded()
        let durable = self.durable
        let options = AtomicFile.Options(
            temporaryDirectory: temporaryDirectory, modificationDate: time, durable: false, createParentDirectories: true)
        let destination = URL(fileURLWithPath: location.path, isDirectory: false)
        try withTemporaryFolder {
            try AtomicFile.write(to: destination, options: options) { file in
                try file.write(header)
                try file.write(data)
                if durable {
                    try file.setModificationDate(time)
                    try file.sync()
                }
            }
        }
        if durable { touched.insert(folderPath(location.folder)) }
    }

    /// The `createdAt` of the value being replaced, or nil for a new key. A damaged file, or
    /// one holding another key, is replaced as if new: writing repairs it.
    private nonisolated func existingCreatedAt(at path: String, key: CacheKey) throws -> Date? {
        do {
            guard let header = try readHeader(at: path, subject: key.value), header.key.elementsEqual(key.value.utf8) else { return nil }
            return header.createdAt
        } catch let error as BuckiaError where error.code == .corrupt {
            return nil
        }
    }

    /// Runs `body`, recreating `.tmp` and trying once more if it was removed from under us.
    private nonisolated func withTemporaryFolder(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as BuckiaError where error.code == .notFound && !DiskFileSystem.isDirectory(temporaryDirectory.path) {
            try DiskFileSystem.createDirectory(temporaryDirectory.path)
            try body()
        }
    }

    private nonisolated func removeValue(_ key: CacheKey, touched: inout Set<String>) throws {
        let location = try location(of: key)
        if try DiskFileSystem.removeFile(location.path), durable { touched.insert(folderPath(location.folder)) }
    }

    /// Syncs each folder whose entries changed, when the engine is durable.
    private nonisolated func syncFolders(_ folders: Set<String>) throws {
        for folder in folders { try DiskFileSystem.syncDirectory(folder) }
    }
}
