import BuckiaCore
import BuckiaHTTP
import BuckiaSigV4
import Foundation

/// Multipart uploads a caller drives part by part (``BuckiaCore/Capability/partUploads``):
/// S3's own CreateMultipartUpload, UploadPart, ListParts and CompleteMultipartUpload, with
/// nothing kept on this machine, so another process holding the id can go on with the upload.
/// ``multipartUpload(_:to:options:)``-style resume state is not written for these.
extension S3Provider {
    public func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String {
        try check(options)
        guard options.condition == nil else {
            throw BuckiaError(.invalidConfiguration, "A condition belongs to the completion of a multipart upload, not its start.", operation: "start upload", path: key.rawValue)
        }
        var options = options
        options.modificationDate = options.modificationDate ?? now()
        return try await createMultipartUpload(key, md5: nil, options: options)
    }

    public func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        guard (1...S3Provider.maximumParts).contains(number) else {
            throw BuckiaError(.invalidConfiguration, "Part numbers run from 1 to \(S3Provider.maximumParts); \(number) is not one.", operation: "upload part", path: key.rawValue)
        }
        let size: Int64
        do {
            let (opened, status) = try LocalFile.openDescribed(file)
            try opened.close()
            size = Int64(status.st_size)
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload part", path: file.path)
        }
        if !settings.profile.verifiesContentMD5 {
            // The server would take any Content-MD5 (moto): the check is made here.
            try Hashing.checkMD5(of: file, is: md5, key: key, operation: "upload part")
        }
        let etag = try await putPart(number, of: key, uploadId: upload, body: .file(file), md5: md5, callersMD5: true)
        return UploadedPart(number: number, etag: Self.unquotedETag(etag), size: size, modified: now())
    }

    public func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart] {
        var parts: [UploadedPart] = []
        var marker: String?
        repeat {
            var query = [("uploadId", upload)]
            if let marker { query.append(("part-number-marker", marker)) }
            let root = try XMLNode.parse(try await send(.get, key: key, query: query, operation: "list parts").data, what: "list parts")
            for part in root.children("Part") {
                guard let number = part.value("PartNumber").flatMap({ Int($0) }), let etag = part.value("ETag"),
                      let size = part.value("Size").flatMap({ Int64($0) }), size >= 0
                else { throw BuckiaError(.corrupt, "The server's list of parts holds a part without a number, an ETag or a size.", operation: "list parts", path: key.rawValue) }
                parts.append(UploadedPart(number: number, etag: Self.unquotedETag(etag), size: size, modified: part.value("LastModified").flatMap(S3Provider.parseISODate)))
            }
            guard root.value("IsTruncated") == "true" else { break }
            guard let next = root.value("NextPartNumberMarker"), next != marker else {
                throw BuckiaError(.corrupt, "The server's list of parts is truncated without a new marker.", operation: "list parts", path: key.rawValue)
            }
            marker = next
        } while true
        return parts.sorted { $0.number < $1.number }
    }

    @discardableResult
    public func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        guard !parts.isEmpty else {
            throw BuckiaError(.invalidConfiguration, "A multipart upload is completed with at least one part.", operation: "complete upload", path: key.rawValue)
        }
        guard condition == nil || settings.profile.conditionalCompletions else {
            throw BuckiaError(
                .unsupported, "This server ignores conditions on multipart completions, so this one cannot be completed conditionally.",
                operation: "complete upload", path: key.rawValue)
        }
        if !settings.profile.partSelections, let held = try await partsForCheck(upload, key: key) {
            guard parts.last?.number == parts.count, held.count == parts.count else {
                throw BuckiaError(
                    .unsupported,
                    "This server completes a multipart upload only from every part uploaded, numbered from 1 without a gap; these \(parts.count) of the \(held.count) held cannot be completed. Complete the upload with all its parts.",
                    operation: "complete upload", path: key.rawValue)
            }
        }
        _ = try await completeMultipartUpload(key, uploadId: upload, parts: parts.map { (key: $0.number, value: "\"\($0.etag)\"") }, condition: condition)
        guard let stored = try await stat(remotePath: key) else {
            throw BuckiaError(.corrupt, "S3 completed the upload, but no object is at the key.", operation: "complete upload", path: key.rawValue)
        }
        return stored
    }

    /// The parts held, or nil when the upload is gone: the completion then goes on, to find
    /// the object an earlier attempt made or to answer that the upload is gone.
    private func partsForCheck(_ upload: String, key: ObjectKey) async throws -> [UploadedPart]? {
        do {
            return try await uploadedParts(of: upload, to: key)
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        }
    }

    public func abortPartUpload(_ upload: String, to key: ObjectKey) async throws {
        _ = try await send(.delete, key: key, query: [("uploadId", upload)], accepts: .successfulAnd([404]), operation: "abort upload")
    }
}
