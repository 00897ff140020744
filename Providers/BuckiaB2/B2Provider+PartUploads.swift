import BuckiaCore
import BuckiaHTTP
import Foundation

/// Multipart uploads a caller drives part by part (``BuckiaCore/Capability/partUploads``):
/// B2's own large files — b2_start_large_file, b2_upload_part, b2_list_parts,
/// b2_finish_large_file and b2_cancel_large_file — with nothing kept on this machine, so
/// another process holding the file id can go on with the upload.
///
/// B2 finishes a large file from every part it holds, numbered 1, 2, … without a gap, and at
/// least two of them; the provider does not claim ``BuckiaCore/Capability/partSelections`` and
/// refuses another selection before asking B2. A part's entity tag is the MD5 B2 reports for
/// it (its SHA-1 when B2 reports none), the same in ``uploadPart(_:of:to:file:md5:)``'s
/// answer and in ``uploadedParts(of:to:)``.
extension B2Provider {
    public func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String {
        guard options.condition == nil else {
            throw BuckiaError(.invalidConfiguration, "A condition belongs to the completion of a multipart upload, not its start.", operation: "start upload", path: key.rawValue)
        }
        try check(options, key: key)
        var options = options
        options.modificationDate = options.modificationDate ?? now()
        let started = try await api(
            "b2_start_large_file",
            ["bucketId": try await bucketId(), "fileName": key.rawValue, "contentType": options.contentType ?? "application/octet-stream",
             "fileInfo": Self.fileInfo(options)],
            as: B2API.File.self, operation: "start upload", path: key.rawValue)
        guard let id = started.fileId, !id.isEmpty else {
            throw BuckiaError(.corrupt, "B2 started a large file but gave no file id.", operation: "start upload", path: key.rawValue)
        }
        return id
    }

    public func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        guard (1...10_000).contains(number) else {
            throw BuckiaError(.invalidConfiguration, "Part numbers run from 1 to 10000; \(number) is not one.", operation: "upload part", path: key.rawValue)
        }
        let digests: [HashAlgorithm: Digest]
        do {
            let reader = try FileReader(file)
            digests = try reader.digests(of: 0..<(try reader.status().size), [.sha1, .md5])
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload part", path: file.path)
        }
        guard let sha1 = digests[.sha1], let actual = digests[.md5] else {
            throw BuckiaError(.io, "The part's digests were not computed.", operation: "upload part", path: file.path)
        }
        guard actual == md5 else {
            throw BuckiaError.checksumMismatch(key, algorithm: .md5, expected: md5.hex, actual: actual.hex, operation: "upload part")
        }
        let response: HTTPResponse
        do {
            response = try await uploadPart(number, of: key, fileId: upload, body: .file(file), sha1: sha1.hex)
        } catch let error as BuckiaError where error.code == .invalidConfiguration {
            await uploadURLs.forget(upload)
            throw try await goneOr(error, upload: upload, key: key)
        }
        // Another process may finish the upload: its part URL is not kept here for a next part
        // that may never come (one b2_get_upload_part_url per part instead).
        await uploadURLs.forget(upload)
        let part = try B2API.decode(B2API.Part.self, from: response.data, call: "b2_upload_part")
        guard part.partNumber == number, part.contentSha1.lowercased() == sha1.hex else {
            throw BuckiaError(.corrupt, "B2 answered b2_upload_part with another part than the one sent.", operation: "upload part", path: key.rawValue)
        }
        return Self.uploadedPart(part)
    }

    public func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart] {
        try await heldParts(upload, key: key).values.map(Self.uploadedPart).sorted { $0.number < $1.number }
    }

    @discardableResult
    public func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        guard condition == nil else {
            throw BuckiaError.unsupported(.conditionalCompletion, provider: .b2, operation: "complete upload")
        }
        guard !parts.isEmpty, zip(parts, parts.dropFirst()).allSatisfy({ $0.number < $1.number }) else {
            throw BuckiaError(.invalidConfiguration, "A multipart upload is completed with its parts in ascending order, at least one.", operation: "complete upload", path: key.rawValue)
        }
        let held: [Int: B2API.Part]
        do {
            held = try await heldParts(upload, key: key)
        } catch let error as BuckiaError where error.code == .notFound {
            // Finished already, and the answer lost on the way: the object is there under this id.
            if let stored = try await stat(remotePath: key), stored.etag == upload { return stored }
            throw error
        }
        guard parts.count >= 2, parts.last?.number == parts.count, held.count == parts.count else {
            throw BuckiaError(
                .unsupported,
                "B2 finishes a large file from every part it holds, numbered from 1 without a gap, and at least two; these \(parts.count) of the \(held.count) held cannot be completed. Complete the upload with all its parts, or send an object of one part in one upload.",
                operation: "complete upload", path: key.rawValue)
        }
        var sha1s: [String] = []
        for listed in parts {
            guard let part = held[listed.number], Self.uploadedPart(part).etag == listed.etag else {
                throw BuckiaError(.notFound, "Part \(listed.number) is not the one the upload holds under that number.", operation: "complete upload", path: key.rawValue)
            }
            sha1s.append(part.contentSha1)
        }
        do {
            let file = try await api("b2_finish_large_file", ["fileId": upload, "partSha1Array": sha1s], as: B2API.File.self, operation: "complete upload", path: key.rawValue)
            await uploadURLs.forget(upload)
            return Self.remoteFile(key, file)
        } catch let error as BuckiaError where !error.isRetryable && error.code != .cancelled {
            // An attempt B2 carried out whose answer was lost leaves the retry nothing to finish.
            guard let stored = try await stat(remotePath: key), stored.etag == upload else { throw error }
            await uploadURLs.forget(upload)
            return stored
        }
    }

    public func abortPartUpload(_ upload: String, to key: ObjectKey) async throws {
        await uploadURLs.forget(upload)
        do {
            _ = try await api("b2_cancel_large_file", ["fileId": upload], operation: "abort upload", path: key.rawValue)
        } catch let error as BuckiaError where error.code == .notFound || error.code == .invalidConfiguration {
            // Gone already (finished, cancelled or never started) is what aborting asks for;
            // anything else B2 refused is thrown.
            guard try await isUnfinished(upload, key: key) else { return }
            throw error
        }
    }

    /// The parts B2 holds for `upload`, with a refusal because the upload is gone as `notFound`.
    private func heldParts(_ upload: String, key: ObjectKey) async throws -> [Int: B2API.Part] {
        do {
            return try await listParts(upload, key: key)
        } catch let error as BuckiaError where error.code == .invalidConfiguration {
            throw try await goneOr(error, upload: upload, key: key)
        }
    }

    /// B2 answers `bad_request` both for an upload that is gone and for a request it cannot
    /// take: the list of unfinished large files says which this was.
    private func goneOr(_ error: BuckiaError, upload: String, key: ObjectKey) async throws -> BuckiaError {
        guard try await isUnfinished(upload, key: key) else {
            return BuckiaError(.notFound, "B2 has no unfinished large file \(upload) for this key: it was finished or cancelled.", operation: "upload part", path: key.rawValue, cause: error)
        }
        return error
    }

    /// Whether B2 lists `upload` among the unfinished large files named `key`.
    private func isUnfinished(_ upload: String, key: ObjectKey) async throws -> Bool {
        try await unfinishedUploads(prefix: key.rawValue).contains { $0.id == upload && $0.key == key.rawValue }
    }

    /// A part as the contract describes it: its entity tag the MD5 B2 reports, else its SHA-1.
    static func uploadedPart(_ part: B2API.Part) -> UploadedPart {
        let md5 = part.contentMd5?.lowercased()
        return UploadedPart(
            number: part.partNumber, etag: md5.flatMap { $0.isEmpty || $0 == "none" ? nil : $0 } ?? part.contentSha1.lowercased(), size: part.contentLength,
            modified: part.uploadTimestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) })
    }
}
