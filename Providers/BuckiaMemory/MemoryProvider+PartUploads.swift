import BuckiaCore
import Foundation

/// Multipart uploads driven part by part (``BuckiaCore/Capability/partUploads``), as S3 keeps
/// them: parts by number, the last sent under a number wins, and completing stores the listed
/// parts in order under the upload's options and the completion's condition.
extension MemoryProvider {
    struct PartUpload: Sendable {
        var key: ObjectKey
        var options: UploadOptions
        var parts: [Int: (data: Data, part: UploadedPart)] = [:]
        /// The object a completion made: what a completion sent again answers, until the
        /// upload is aborted.
        var completed: RemoteFile?
    }

    public func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String {
        try options.validate()
        guard options.condition == nil else {
            throw BuckiaError(.invalidConfiguration, "A condition belongs to the completion of a multipart upload, not its start.", operation: "start upload", path: key.rawValue)
        }
        var options = options
        options.modificationDate = options.modificationDate ?? now()
        let id = Hex.encode(try SecureRandom.bytes(count: 16))
        partUploads.withLock { $0[id] = PartUpload(key: key, options: options) }
        return id
    }

    public func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        guard (1...10_000).contains(number) else {
            throw BuckiaError(.invalidConfiguration, "Part numbers run from 1 to 10000; \(number) is not one.", operation: "upload part", path: key.rawValue)
        }
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload part", path: file.path)
        }
        let actual = try Hashing.digest(data, .md5)
        guard actual == md5 else {
            throw BuckiaError.checksumMismatch(key, algorithm: .md5, expected: md5.hex, actual: actual.hex, operation: "upload part")
        }
        let part = UploadedPart(number: number, etag: actual.hex, size: Int64(data.count), modified: now())
        try partUploads.withLock { uploads in
            guard uploads[upload]?.key == key, uploads[upload]?.completed == nil else { throw Self.noUpload(key, "upload part") }
            uploads[upload]?.parts[number] = (data, part)
        }
        return part
    }

    public func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart] {
        try partUploads.withLock { uploads in
            guard let found = uploads[upload], found.key == key, found.completed == nil else { throw Self.noUpload(key, "list parts") }
            return found.parts.values.map(\.part).sorted { $0.number < $1.number }
        }
    }

    @discardableResult
    public func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        guard !parts.isEmpty, zip(parts, parts.dropFirst()).allSatisfy({ $0.number < $1.number }) else {
            throw BuckiaError(.invalidConfiguration, "A multipart upload is completed with its parts in ascending order, at least one.", operation: "complete upload", path: key.rawValue)
        }
        guard let found = partUploads.withLock({ $0[upload] }), found.key == key else { throw Self.noUpload(key, "complete upload") }
        if let made = found.completed {
            // Completed already, and the answer lost on the way: the object it made, while it is there.
            guard let current = try await stat(remotePath: key), current.etag == made.etag else { throw Self.noUpload(key, "complete upload") }
            return current
        }
        var data = Data()
        for listed in parts {
            guard let held = found.parts[listed.number], held.part.etag == listed.etag else {
                throw BuckiaError(.notFound, "Part \(listed.number) is not the one the upload holds under that number.", operation: "complete upload", path: key.rawValue)
            }
            data.append(held.data)
        }
        var options = found.options
        options.condition = condition
        let stored = try store(data, at: key, options: options, modified: options.modificationDate ?? now())
        partUploads.withLock { uploads in
            uploads[upload]?.parts = [:]
            uploads[upload]?.completed = stored
        }
        return stored
    }

    public func abortPartUpload(_ upload: String, to key: ObjectKey) async throws {
        partUploads.withLock { uploads in
            if uploads[upload]?.key == key { uploads.removeValue(forKey: upload) }
        }
    }

    static func noUpload(_ key: ObjectKey, _ operation: String) -> BuckiaError {
        BuckiaError(.notFound, "No multipart upload by that id is under way for this key: it was completed, aborted or never started.", operation: operation, path: key.rawValue)
    }
}
