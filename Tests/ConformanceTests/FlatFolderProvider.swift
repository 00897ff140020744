import BuckiaCore
import BuckiaProviderKit
import Foundation

// A third-party provider, complete: every object is one file in a single folder, named by
// the hex of its key. Docs/WritingAProvider.md shows this file verbatim, and
// ConformanceTests runs it through every scenario, so the guide cannot rot.

extension ProviderType {
    /// The name configurations select this provider by.
    static let flatFolder: ProviderType = "flatfolder"
}

/// Stores objects as `<folder>/<hex of key>`: no nesting, any key, nothing to escape.
struct FlatFolderProvider: StorageProviderPlugin {
    static let providerType: ProviderType = .flatFolder

    let folder: URL
    let capabilities = ProviderCapabilities(
        features: [.listStartAfter, .pagedListing, .streamingTransfers, .preservesModificationTime, .persistent, .resumableListing],
        checksums: [.sha256: .read], listedFields: [.modificationDate],
        modificationTimePrecision: .microseconds(1), maxListPageSize: 500)

    init(context: ProviderContext) throws {
        let configuration = context.configuration
        try configuration.checkOptions(known: ["folder"])
        folder = URL(fileURLWithPath: try configuration.requireOption("folder"), isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw BuckiaError.wrapping(error, operation: "create folder", path: folder.path)
        }
    }

    private func file(for key: ObjectKey) -> URL {
        folder.appendingPathComponent(Hex.encode(Array(key.rawValue.utf8)))
    }

    private func describe(_ key: ObjectKey, at url: URL) throws -> RemoteFile {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        return RemoteFile(path: key, size: size, modificationDate: attributes[.modificationDate] as? Date)
    }

    func testConnection() async throws -> ConnectionStatus {
        let exists = FileManager.default.fileExists(atPath: folder.path)
        return ConnectionStatus(isConnected: exists, message: exists ? "Folder is ready." : "Folder is missing.")
    }

    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try options.checkSupported(by: self)
        do {
            // The file's own time unless the options give one; copied through a temporary,
            // fsync'd and renamed into place.
            let modified = try options.modificationDate
                ?? FileManager.default.attributesOfItem(atPath: localURL.path)[.modificationDate] as? Date
            try AtomicFile.copy(from: localURL, to: file(for: remotePath), options: AtomicFile.Options(modificationDate: modified))
            return try describe(remotePath, at: file(for: remotePath))
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: remotePath.rawValue)
        }
    }

    func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        try options.checkSupported(by: self)
        guard let stored = try await stat(remotePath: remotePath) else {
            throw BuckiaError.notFound(remotePath, operation: "download")
        }
        do {
            let options = AtomicFile.Options(modificationDate: stored.modificationDate)
            try AtomicFile.copy(from: file(for: remotePath), to: localURL, options: options)
            return DownloadResult(file: stored, localURL: localURL)
        } catch {
            throw BuckiaError.wrapping(error, operation: "download", path: remotePath.rawValue)
        }
    }

    func deleteFile(remotePath: ObjectKey) async throws {
        do {
            try FileManager.default.removeItem(at: file(for: remotePath))
        } catch CocoaError.fileNoSuchFile {
            return  // deleting a missing object succeeds
        } catch {
            throw BuckiaError.wrapping(error, operation: "delete", path: remotePath.rawValue)
        }
    }

    func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        let url = file(for: remotePath)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try describe(remotePath, at: url)
    }

    /// Reads the folder once per listing; the snapshot lister sorts and pages it.
    func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        var entries: [ListEntry] = []
        do {
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
                guard let bytes = Hex.decode(name) else { continue }  // not one of ours
                let text = String(decoding: bytes, as: UTF8.self)
                guard let key = try? ObjectKey(text) else {
                    entries.append(.unaddressable(UnaddressableKey(bytes: bytes, reason: "not a valid key")))
                    continue
                }
                guard key.hasPrefix(request.options.prefix) else { continue }
                entries.append(.object(try describe(key, at: folder.appendingPathComponent(name))))
            }
        } catch {
            throw BuckiaError.wrapping(error, operation: "list", path: folder.path)
        }
        return try SnapshotLister(entries: entries, request: request, maxPageSize: capabilities.maxListPageSize)
    }

    func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        guard algorithm == .sha256, try await stat(remotePath: remotePath) != nil else { return nil }
        return try Hashing.digests(ofFile: file(for: remotePath), [.sha256])[.sha256]?.hex
    }
}
