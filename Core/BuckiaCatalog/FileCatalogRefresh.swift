import BuckiaCore
import Foundation

extension FileRecord {
    /// The record a provider's listing entry gives by default: the key is both `fileId` and
    /// `key`, the title the key's last component, the publish date the file's modification
    /// time, the size its size.
    public init(remoteFile file: RemoteFile) {
        let key = file.path.rawValue
        self.init(
            fileId: key, key: key, title: key.split(separator: "/").last.map(String.init), publishDate: file.effectiveModificationDate,
            size: file.size)
    }
}

extension FileCatalogClient {
    /// Fills the catalog from a provider's listing under `prefix` (a folder, `""` for all):
    /// each object becomes the record `mapping` makes of it (nil leaves it out), all cached in
    /// one ``cacheFiles`` call, so a failed listing changes nothing. With `removingMissing`,
    /// records under the prefix that the listing no longer has are deleted afterwards (and
    /// their media with them): the way back from a damaged catalog is a new file filled this
    /// way.
    ///
    /// - Returns: How many records the listing gave and how many were removed.
    @discardableResult
    public func refresh(
        from provider: any StorageProvider, prefix: String = "", removingMissing: Bool = false,
        mapping: @Sendable (RemoteFile) throws -> FileRecord? = { FileRecord(remoteFile: $0) }
    ) async throws -> (cached: Int, removed: Int) {
        var records: [FileRecord] = []
        for file in try await provider.listFiles(path: prefix) {
            if let record = try mapping(file) { records.append(record) }
        }
        try await cacheFiles(records)
        guard removingMissing else { return (records.count, 0) }
        var folder = prefix
        if !folder.isEmpty && !folder.hasSuffix("/") { folder += "/" }
        // Compared as bytes, as the catalog compares text (String's hasPrefix and Set would
        // fold NFC and NFD twins together).
        let listed = Set(records.map { ExactText($0.fileId) })
        var removed = 0
        for record in try await getFiles() where record.key.utf8.starts(with: folder.utf8) && !listed.contains(ExactText(record.fileId)) {
            try await deleteFile(record)
            removed += 1
        }
        return (records.count, removed)
    }
}
