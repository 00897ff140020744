import BuckiaCore
import BuckiaProviderKit
import Foundation

/// What the gateway keeps in the backend of a multipart upload the backend holds itself
/// (``BuckiaCore/Capability/partUploads``), at `.buckia-s3/uploads/BUCKET/ID/upload`: whose it
/// is, for which key, and the backend's own upload id. Written once, when the upload starts.
struct BackendUploadRecord: Codable, Sendable, Equatable {
    var key: String
    var owner: String
    /// When it started, in seconds since 1970.
    var initiated: Double
    /// The backend's upload id.
    var backend: String
    /// The checksum algorithm every part carries (its raw value), if any.
    var checksumAlgorithm: String?
    /// Whether the object's checksum is the parts' composite (`COMPOSITE`) or of its bytes.
    var composite: Bool

    var algorithm: S3ChecksumAlgorithm? { checksumAlgorithm.flatMap(S3ChecksumAlgorithm.init(rawValue:)) }
}

/// What a completed upload answered, kept beside its upload for an hour so that a completion
/// sent again, through any gateway, gets the same answer.
struct CompletedUploadRecord: Codable, Sendable {
    var key: String
    var owner: String
    var parts: [String]
    var answer: String
    var at: Double
    /// The backend's upload id: told the upload is over when the answer is forgotten, so a
    /// backend that keeps a completion's answer too (``BuckiaCore/PartStagingProvider``) can let it go.
    var backend: String?
}

/// The parts' sizes and checksum of an object a backend's multipart upload made, which the
/// gateway could not put in its metadata (fixed when the upload started), kept at
/// `.buckia-s3/objects/SHA256(backend key)` and trusted only while the object's ETag is `etag`.
struct ObjectSidecarRecord: Codable, Sendable {
    /// The backend's key of the object.
    var key: String
    var etag: String
    var record: String
}

/// Multipart uploads over a backend that keeps them itself (S3, Ceph RGW): CreateMultipartUpload
/// starts the backend's upload, each part goes to the backend's UploadPart, and completion is
/// the backend's own; the gateway keeps nothing in its process. What S3 clients expect and the
/// backend does not keep — whose upload it is, each part's checksum, the answer to a retried
/// completion, an object's part sizes — is kept in the backend under the reserved folder, so
/// every gateway over the backend serves every upload alike: a fleet of stateless gateways
/// behind a load balancer.
///
/// The upload id a client sees is 128 random bits naming the record; the record names the
/// backend's upload and its owner. A client cannot name another's upload without guessing
/// those bits, and one that does is still not its owner.
extension S3Gateway {
    /// How long a completed upload's answer is kept for a retried completion.
    static let completedAnswerLifetime: TimeInterval = 3_600

    func uploadsPrefix(_ bucket: String) -> String { options.root + Self.reservedFolder + "/uploads/" + bucket + "/" }

    func uploadRecordKey(_ bucket: String, _ id: String) throws -> ObjectKey { try ObjectKey(uploadsPrefix(bucket) + id + "/upload") }

    func completedRecordKey(_ bucket: String, _ id: String) throws -> ObjectKey { try ObjectKey(uploadsPrefix(bucket) + id + "/completed") }

    func partRecordsPrefix(_ bucket: String, _ id: String) -> String { uploadsPrefix(bucket) + id + "/parts/" }

    /// The sidecar of the object at `remote` (the backend's key).
    func sidecarKey(_ remote: ObjectKey) throws -> ObjectKey {
        try ObjectKey(options.root + Self.reservedFolder + "/objects/" + Hashing.sha256(Data(remote.rawValue.utf8)).hex)
    }

    static func isUploadId(_ id: String) -> Bool { PartStagingProvider.isUploadId(id) }

    static let noSuchUpload = S3Failure(
        "NoSuchUpload", "The specified multipart upload does not exist. The upload ID might be invalid, or the multipart upload might have been aborted or completed.")

    // MARK: Records

    private func readJSON<T: Decodable>(_ type: T.Type, at key: ObjectKey) throws -> T? {
        let data: Data
        do {
            data = try Blocking.wait { [provider] in try await provider.readData(remotePath: key, range: nil) }
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        }
        // Read from the backend, so checked as any outside JSON is; a record that does not
        // decode was not written by a gateway, and is read as none (the answer is "no record").
        guard data.count <= 1 << 20 else { return nil }
        do {
            return try JSONValidation.decode(T.self, from: data, what: "The gateway's record at \(key.rawValue)")
        } catch {
            return nil
        }
    }

    private func writeJSON(_ value: some Encodable, at key: ObjectKey, createOnly: Bool = false) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(value)
        // Dated by the gateway's clock where the backend keeps the date given (a folder), which
        // the sweep then reads.
        var upload = UploadOptions(contentType: "application/json", modificationDate: options.clock())
        if createOnly && provider.capabilities.supports(.conditionalWrite) { upload.condition = .ifNoneMatch }
        let finalOptions = upload
        try Blocking.wait { [provider] in _ = try await provider.uploadData(data, remotePath: key, options: finalOptions) }
    }

    /// The objects under `prefix`, by key.
    private func listed(_ prefix: String) throws -> [RemoteFile] {
        try Blocking.wait { [provider] in
            var files: [RemoteFile] = []
            for try await entry in provider.list(ListOptions(prefix: prefix, recursive: true)) {
                if let file = entry.file { files.append(file) }
            }
            return files
        }
    }

    private func deleteQuietly(_ keys: [ObjectKey]) {
        for key in keys {
            do {
                try Blocking.wait { [provider] in try await provider.deleteFile(remotePath: key) }
            } catch {
                // Left for the sweep of abandoned uploads, which removes what it finds.
            }
        }
    }

    /// Removes an upload's records but its completed answer.
    private func removeUploadRecords(_ bucket: String, _ id: String) {
        do {
            deleteQuietly(try listed(uploadsPrefix(bucket) + id + "/").map(\.path).filter { !$0.rawValue.hasSuffix("/completed") })
        } catch {
            // Left for the sweep, which removes the records of uploads the backend no longer has.
        }
        state.withLock { _ = $0.uploadRecords.removeValue(forKey: id) }
    }

    // MARK: Operations

    func startBackendUpload(
        _ context: RequestContext, key: ObjectKey, options uploadOptions: UploadOptions, checksumAlgorithm: S3ChecksumAlgorithm?, composite: Bool
    ) throws -> String {
        var start = uploadOptions
        start.knownChecksums = [:]
        start.condition = nil
        let finalStart = start
        let backend = try Blocking.wait { [provider] in try await provider.startPartUpload(to: key, options: finalStart) }
        let id = Hex.encode(try SecureRandom.bytes(count: 16))
        let record = BackendUploadRecord(
            key: context.key, owner: context.principal?.name ?? "", initiated: options.clock().timeIntervalSince1970, backend: backend,
            checksumAlgorithm: checksumAlgorithm?.rawValue, composite: composite)
        do {
            try writeJSON(record, at: try uploadRecordKey(context.bucket, id), createOnly: true)
        } catch {
            do {
                try Blocking.wait { [provider] in try await provider.abortPartUpload(backend, to: key) }
            } catch {
                // The record's failure is the answer; the backend's own lifecycle, or `buckia cleanup`, ends the upload.
            }
            throw error
        }
        remember(id, record)
        return id
    }

    private func remember(_ id: String, _ record: BackendUploadRecord) {
        state.withLock { state in
            if state.uploadRecords.count >= 1_024 { state.uploadRecords.removeAll() }
            state.uploadRecords[id] = record
        }
    }

    /// The upload `id` when it is this request's: in this bucket, for this key, this user's.
    func backendUpload(_ id: String, _ context: RequestContext) throws -> BackendUploadRecord {
        guard Self.isUploadId(id) else { throw Self.noSuchUpload }
        let record: BackendUploadRecord
        if let known = state.withLock({ $0.uploadRecords[id] }) {
            record = known
        } else {
            guard let read = try readJSON(BackendUploadRecord.self, at: try uploadRecordKey(context.bucket, id)) else { throw Self.noSuchUpload }
            record = read
            remember(id, read)
        }
        guard record.key == context.key, record.owner == context.principal?.name ?? "" else { throw Self.noSuchUpload }
        return record
    }

    func uploadBackendPart(_ context: inout RequestContext, uploadId: String, number: Int, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .write)
        let record = try backendUpload(uploadId, context)
        let source = try partSource(&context, body: body, checksumAlgorithm: record.algorithm)
        var written: (count: Int64, md5: String?, checksum: (algorithm: S3ChecksumAlgorithm, value: [UInt8])?) = (0, nil, nil)
        /// Reads the rest of the body, checks it, and gives its MD5.
        func finish() throws -> Digest {
            written = try source.finish()
            if let length = source.length, written.count != length { throw S3Failure("IncompleteBody", "The body ended before its declared length.") }
            guard let md5Hex = written.md5, let md5 = Hex.decode(md5Hex) else { throw BuckiaError(.io, "The part's MD5 was not computed.") }
            return Digest(bytes: md5)
        }
        let part: UploadedPart
        do {
            if let store = provider as? any LocalPartStore {
                // Straight into the backend's own file for the part, as the body arrives.
                part = try store.receivePart(number, of: record.backend, to: key, length: source.length) { write in
                    while let chunk = try source.next() { try write(chunk) }
                    return try finish()
                }
            } else {
                // The part goes to the backend from a file of this request's own, so a transient
                // failure can send it again and the backend can check its MD5; the file goes with the request.
                let spool = staging.appendingPathComponent("part-\(Hex.encode(try SecureRandom.bytes(count: 8)))")
                defer { Self.removeQuietly(spool) }
                let output = try LocalFile.createExclusive(spool, permissions: 0o600)
                while let chunk = try source.next() { try output.write(chunk) }
                try output.close()
                let md5 = try finish()
                part = try Blocking.wait { [provider] in try await provider.uploadPart(number, of: record.backend, to: key, file: spool, md5: md5) }
            }
        } catch let error as BuckiaError where error.code == .notFound {
            throw Self.noSuchUpload
        }
        context.bytesIn = source.copied ? 0 : written.count
        let checksum = written.checksum.flatMap { $0.algorithm == record.algorithm ? $0.value : nil }
        if let checksum {
            // Named by the part's number, its ETag and its checksum: a listing finds the
            // checksum of whichever version of the part the backend holds.
            let name = partRecordsPrefix(context.bucket, uploadId) + String(format: "%05d", number) + "-" + part.etag + "-" + Hex.encode(checksum)
            try writeJSON([String: String](), at: try ObjectKey(name))
        }
        let shown = written.checksum.map { ($0.algorithm, Data($0.value).base64EncodedString()) }
        if source.copied {
            let element = shown.map { $0.0.element($0.1) } ?? ""
            return Self.xml("<CopyPartResult><LastModified>\(Self.isoDate(part.modified ?? options.clock()))</LastModified><ETag>\"\(part.etag)\"</ETag>\(element)</CopyPartResult>")
        }
        var headers: [(name: String, value: String)] = [("ETag", "\"\(part.etag)\"")]
        if let shown { headers.append((shown.0.header, shown.1)) }
        return HTTPServerResponse(status: 200, headers: headers)
    }

    /// The parts the backend holds, each with its checksum from the part records.
    func backendParts(_ context: RequestContext, uploadId: String, record: BackendUploadRecord) throws -> [ListedPart] {
        let key = try remoteKey(context, for: .write)
        let held: [UploadedPart]
        do {
            held = try Blocking.wait { [provider] in try await provider.uploadedParts(of: record.backend, to: key) }
        } catch let error as BuckiaError where error.code == .notFound {
            throw Self.noSuchUpload
        }
        var checksums: [String: [UInt8]] = [:]
        if record.algorithm != nil {
            let prefix = partRecordsPrefix(context.bucket, uploadId)
            for file in try listed(prefix) {
                guard let name = file.path.rawValue.utf8Dropping(prefix: prefix) else { continue }
                let fields = name.split(separator: "-", maxSplits: 1)
                guard fields.count == 2, let dash = fields[1].lastIndex(of: "-"), let value = Hex.decode(String(fields[1][fields[1].index(after: dash)...])) else { continue }
                checksums["\(Int(fields[0]) ?? 0) \(fields[1][..<dash])"] = value
            }
        }
        return held.map { part in
            ListedPart(number: part.number, modified: part.modified ?? Date(timeIntervalSince1970: record.initiated), etag: part.etag, size: part.size,
                       checksum: checksums["\(part.number) \(part.etag)"])
        }
    }

    func completeBackendUpload(_ context: inout RequestContext, uploadId: String, key: ObjectKey, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let request = try completionRequest(&context, body: body)
        let record: BackendUploadRecord
        let held: [ListedPart]
        do {
            record = try backendUpload(uploadId, context)
            held = try backendParts(context, uploadId: uploadId, record: record)
        } catch let failure as S3Failure where failure.code == "NoSuchUpload" {
            // Completed already, by this gateway or another, and its answer lost on the way.
            if Self.isUploadId(uploadId), let done = try readJSON(CompletedUploadRecord.self, at: try completedRecordKey(context.bucket, uploadId)),
               done.key == context.key, done.owner == context.principal?.name ?? "", done.parts == request.asked,
               options.clock().timeIntervalSince1970 - done.at < Self.completedAnswerLifetime
            {
                return Self.xml(done.answer)
            }
            throw failure
        }
        if request.condition != nil, !provider.capabilities.supports(.conditionalCompletion) {
            throw S3Failure(
                "NotImplemented", "The backend ignores conditions on multipart completions, so this gateway cannot complete one conditionally; complete it without If-Match or If-None-Match.",
                status: 501)
        }
        let byNumber = Dictionary(held.map { ($0.number, $0) }, uniquingKeysWith: { $1 })
        var chosen: [UploadedPart] = []
        for (index, item) in request.listed.enumerated() {
            guard let part = byNumber[item.number], Self.bareTag(item.etag) == part.etag else {
                throw S3Failure(
                    "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
            }
            if index < request.listed.count - 1 && part.size < options.minimumPartSize {
                throw S3Failure("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
            }
            chosen.append(UploadedPart(number: part.number, etag: part.etag, size: part.size, modified: part.modified))
        }
        let objectChecksum = try Self.objectChecksum(
            record.algorithm, composite: record.composite, parts: byNumber.mapValues { ($0.size, $0.checksum) },
            listed: request.listed.map { ($0.number, $0.checksums) }, sent: request.sentChecksum)
        let parts = chosen
        let stored: RemoteFile
        do {
            stored = try Blocking.wait { [provider] in try await provider.completePartUpload(record.backend, to: key, parts: parts, condition: request.condition) }
        } catch let error as BuckiaError where error.code == .notFound {
            throw Self.noSuchUpload
        } catch let error as BuckiaError where error.code == .unsupported {
            // A selection of parts the backend cannot finish (B2 takes every part, 1…N, two at
            // least): the upload stays as it was, to be completed with all its parts.
            throw S3Failure("NotImplemented", "The backend cannot complete this selection of parts: \(error.message)", status: 501)
        }
        let etag = Self.etag(of: stored)
        let objectRecord = S3ObjectRecord(partSizes: chosen.map(\.size), checksum: objectChecksum)
        if !objectRecord.isEmpty && (chosen.count > 1 || objectChecksum != nil) { try storeSidecar(objectRecord, for: stored) }
        let answer =
            "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>/\(context.bucket.xmlEscaped)/\(context.key.xmlEscaped)</Location><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><ETag>\(etag.xmlEscaped)</ETag>\(Self.checksumElements(objectChecksum))</CompleteMultipartUploadResult>"
        try writeJSON(
            CompletedUploadRecord(
                key: context.key, owner: record.owner, parts: request.asked, answer: answer, at: options.clock().timeIntervalSince1970, backend: record.backend),
            at: try completedRecordKey(context.bucket, uploadId))
        removeUploadRecords(context.bucket, uploadId)
        return Self.xml(answer)
    }

    func abortBackendUpload(_ context: RequestContext, uploadId: String) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .write)
        let record = try backendUpload(uploadId, context)
        try Blocking.wait { [provider] in try await provider.abortPartUpload(record.backend, to: key) }
        removeUploadRecords(context.bucket, uploadId)
        return HTTPServerResponse(status: 204)
    }

    /// Every upload with a record in `bucket`: its id and record.
    func backendUploads(inBucket bucket: String) throws -> [(id: String, record: BackendUploadRecord)] {
        let prefix = uploadsPrefix(bucket)
        var uploads: [(id: String, record: BackendUploadRecord)] = []
        for file in try listed(prefix) {
            guard let name = file.path.rawValue.utf8Dropping(prefix: prefix), name.hasSuffix("/upload") else { continue }
            let id = String(name.dropLast("/upload".count))
            guard Self.isUploadId(id), let record = try readJSON(BackendUploadRecord.self, at: file.path) else { continue }
            uploads.append((id, record))
        }
        return uploads
    }

    /// Aborts every upload into `bucket` (the bucket is going).
    func abortBackendUploads(inBucket bucket: String) throws {
        for (id, record) in try backendUploads(inBucket: bucket) {
            let key = try ObjectKey(options.root + bucket + "/" + record.key)
            try Blocking.wait { [provider] in try await provider.abortPartUpload(record.backend, to: key) }
            removeUploadRecords(bucket, id)
        }
    }

    /// Aborts, in every bucket, the uploads started longer than
    /// ``S3GatewayOptions/abandonedUploadLifetime`` ago, and forgets completed answers older
    /// than an hour: AWS's `AbortIncompleteMultipartUpload` lifecycle rule, run by whichever
    /// gateway starts an upload, at most once a minute each.
    func sweepBackendUploads() {
        let now = options.clock()
        let due = state.withLock { state -> Bool in
            guard state.lastSweep.map({ now.timeIntervalSince($0) >= 60 || now < $0 }) ?? true else { return false }
            state.lastSweep = now
            return true
        }
        guard due else { return }
        let lifetime = options.abandonedUploadLifetime.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        let prefix = options.root + Self.reservedFolder + "/uploads/"
        let files: [RemoteFile]
        do {
            files = try listed(prefix)
        } catch {
            return  // housekeeping: the next sweep tries again
        }
        for file in files {
            guard let name = file.path.rawValue.utf8Dropping(prefix: prefix) else { continue }
            let written = file.serverModified ?? file.modificationDate ?? now
            let fields = name.split(separator: "/", maxSplits: 2)
            guard fields.count == 3, Self.isUploadId(String(fields[1])) else { continue }
            let (bucket, id) = (String(fields[0]), String(fields[1]))
            if fields[2] == "completed", now.timeIntervalSince(written) > Self.completedAnswerLifetime {
                do {
                    if let done = try readJSON(CompletedUploadRecord.self, at: file.path), let backend = done.backend {
                        let key = try ObjectKey(options.root + bucket + "/" + done.key)
                        try Blocking.wait { [provider] in try await provider.abortPartUpload(backend, to: key) }
                    }
                } catch {
                    // Housekeeping: what the backend kept of a completed upload goes with its own lifecycle.
                }
                deleteQuietly([file.path])
            } else if fields[2] == "upload", let lifetime, now.timeIntervalSince(written) > lifetime {
                do {
                    guard let record = try readJSON(BackendUploadRecord.self, at: file.path) else { continue }
                    let key = try ObjectKey(options.root + bucket + "/" + record.key)
                    try Blocking.wait { [provider] in try await provider.abortPartUpload(record.backend, to: key) }
                    removeUploadRecords(bucket, id)
                } catch {
                    // Housekeeping: the next sweep tries again.
                }
            }
        }
    }

    /// Keeps `record` beside `file`, for as long as `file` is the object at its key.
    func storeSidecar(_ record: S3ObjectRecord, for file: RemoteFile) throws {
        try writeJSON(ObjectSidecarRecord(key: file.path.rawValue, etag: Self.bareTag(Self.etag(of: file)), record: record.text), at: try sidecarKey(file.path))
    }

    /// The record of `file`: in its metadata, or, for an object a backend's multipart upload
    /// made, in its sidecar while that names the object's ETag.
    func objectRecord(_ file: RemoteFile) throws -> S3ObjectRecord {
        let record = S3ObjectRecord(metadata: file.metadata)
        guard record.isEmpty, provider.capabilities.supports(.partUploads) else { return record }
        let tag = Self.bareTag(Self.etag(of: file))
        guard let sidecar = try readJSON(ObjectSidecarRecord.self, at: try sidecarKey(file.path)), sidecar.key == file.path.rawValue, sidecar.etag == tag else { return record }
        return S3ObjectRecord(metadata: [S3ObjectRecord.metadataName: sidecar.record])
    }
}

/// A part as ListParts and the completion see it.
struct ListedPart: Sendable {
    var number: Int
    var modified: Date
    var etag: String
    var size: Int64
    var checksum: [UInt8]?
}
