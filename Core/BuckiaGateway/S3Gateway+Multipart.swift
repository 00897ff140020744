import BuckiaCore
import BuckiaSecurity
import BuckiaSigV4
import Foundation

/// A multipart upload under way. Its parts wait in the gateway's staging folder until
/// CompleteMultipartUpload hands them, in order, to the backend.
///
/// Clients cut a file into parts of one size (the last one shorter), so part N is written
/// straight into one file per upload at (N − 1) × that size: when the parts listed at the end
/// are 1…K and fill their places, that file already is the object, and completing it costs no
/// copy (a hard link into a ``Capability/localFiles`` backend, or one `uploadFile` from it
/// into any other). A part that does not fit the pattern — a different size, a second upload
/// of a part number, a body of unknown length — goes into a file of its own, and completing
/// then streams the pieces in order: slower, never wrong.
struct MultipartUpload: Sendable {
    struct Part: Sendable {
        var size: Int64
        var md5: String
        var location: Location
        var modified: Date
        /// The part's checksum in the upload's algorithm, when it has one.
        var checksum: [UInt8]?
    }

    enum Location: Sendable, Equatable {
        /// In ``MultipartUpload/assembly`` at this offset.
        case assembly(offset: Int64)
        /// In a file of its own.
        case file(URL)
    }

    var id: String
    var bucket: String
    /// The key in the bucket, as the client named it.
    var key: String
    var remoteKey: ObjectKey
    /// Who started it: only they may add parts, list, complete or abort it.
    var owner: String
    var options: UploadOptions
    /// The checksum algorithm every part carries, and whether the object's checksum is a
    /// composite of the parts' (`COMPOSITE`) or of its bytes (`FULL_OBJECT`).
    var checksumAlgorithm: S3ChecksumAlgorithm?
    var compositeChecksum = false
    var initiated: Date
    /// When it was started or last given a part: an upload idle past
    /// ``S3GatewayOptions/abandonedUploadLifetime`` is aborted.
    var lastActivity: Date
    var folder: URL
    var parts: [Int: Part] = [:]
    /// The file the parts are written into by position, open for the upload's lifetime.
    var assembly: AssemblyFile
    /// The size of the first part that arrived with a known, non-zero length: part N's place
    /// in ``assembly`` starts at (N − 1) × stride.
    var stride: Int64?
    /// The part numbers whose place in ``assembly`` is taken: being written, or holding the
    /// part. A place is written once; a part sent again goes into a file of its own.
    var places: Set<Int> = []
    /// Set while CompleteMultipartUpload hands the parts over: no part may change then.
    var completing = false
}

/// The open file a multipart upload's parts are written into, shared by the requests that
/// write its parts at once (each into its own range, by position).
final class AssemblyFile: @unchecked Sendable {
    let url: URL
    /// Written only with `pwrite` at non-overlapping ranges, truncated only while the upload
    /// is completing (when no part is being written).
    let file: LocalFile

    init(url: URL) throws {
        self.url = url
        file = try LocalFile.createExclusiveForUpdate(url, permissions: 0o644)
    }
}

extension S3Gateway {
    func createUpload(_ context: inout RequestContext) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .write)
        try requireBucket(context.bucket)
        abortAbandonedUploads()
        var uploadOptions = try uploadOptions(context)
        uploadOptions.condition = nil  // a condition is CompleteMultipartUpload's to give
        // The checksum the parts will carry (each part's is checked as it arrives), echoed as S3 does.
        var echoed: [(name: String, value: String)] = []
        var checksumAlgorithm: S3ChecksumAlgorithm?
        var composite = false
        if let name = try context.header("x-amz-checksum-algorithm")?.uppercased() {
            guard let algorithm = S3ChecksumAlgorithm(name: name) else {
                throw S3Failure("InvalidRequest", "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]")
            }
            echoed.append(("x-amz-checksum-algorithm", name))
            let type = try context.header("x-amz-checksum-type")?.uppercased() ?? (algorithm == .crc64nvme ? "FULL_OBJECT" : "COMPOSITE")
            guard type == "COMPOSITE" || type == "FULL_OBJECT" else { throw S3Failure("InvalidRequest", "The x-amz-checksum-type header must be COMPOSITE or FULL_OBJECT.") }
            // A whole-object checksum is combined from the parts' CRCs; a hash cannot be.
            guard type == "COMPOSITE" || algorithm.isCRC else {
                throw S3Failure("InvalidRequest", "The FULL_OBJECT checksum type cannot be used with the \(name.lowercased()) checksum algorithm.")
            }
            guard type == "FULL_OBJECT" || algorithm != .crc64nvme else {
                throw S3Failure("InvalidRequest", "The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm.")
            }
            echoed.append(("x-amz-checksum-type", type))
            checksumAlgorithm = algorithm
            composite = type == "COMPOSITE"
        } else if try context.header("x-amz-checksum-type") != nil {
            throw S3Failure("InvalidRequest", "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.")
        }
        if provider.capabilities.supports(.partUploads) {
            sweepBackendUploads()
            let id = try startBackendUpload(context, key: key, options: uploadOptions, checksumAlgorithm: checksumAlgorithm, composite: composite)
            return initiated(context, id: id, echoed: echoed)
        }
        let id = Hex.encode(try SecureRandom.bytes(count: 16))
        let folder = staging.appendingPathComponent(id, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw BuckiaError.wrapping(error, operation: "CreateMultipartUpload", path: folder.path)
        }
        let assembly: AssemblyFile
        do {
            assembly = try AssemblyFile(url: folder.appendingPathComponent("object", isDirectory: false))
        } catch {
            Self.removeQuietly(folder)
            throw error
        }
        let upload = MultipartUpload(
            id: id, bucket: context.bucket, key: context.key, remoteKey: key, owner: context.principal?.name ?? "", options: uploadOptions,
            checksumAlgorithm: checksumAlgorithm, compositeChecksum: composite, initiated: options.clock(), lastActivity: options.clock(), folder: folder, assembly: assembly)
        state.withLock { $0.uploads[id] = upload }
        return initiated(context, id: id, echoed: echoed)
    }

    private func initiated(_ context: RequestContext, id: String, echoed: [(name: String, value: String)]) -> HTTPServerResponse {
        var response = Self.xml(
            "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><UploadId>\(id)</UploadId></InitiateMultipartUploadResult>"
        )
        response.headers += echoed
        return response
    }

    /// The upload `id` when it is this request's: same bucket, key and owner.
    func upload(_ id: String, _ context: RequestContext) throws -> MultipartUpload {
        guard let upload = state.withLock({ $0.uploads[id] }), upload.bucket == context.bucket, upload.key == context.key,
              upload.owner == context.principal?.name
        else {
            throw S3Failure(
                "NoSuchUpload", "The specified multipart upload does not exist. The upload ID might be invalid, or the multipart upload might have been aborted or completed.")
        }
        return upload
    }

    func uploadPart(_ context: inout RequestContext, uploadId: String, body: HTTPRequestBody) throws -> HTTPServerResponse {
        _ = try remoteKey(context, for: .write)
        guard let text = context.query["partNumber"], text.utf8.count <= 5, text.utf8.allSatisfy({ (48...57).contains($0) }), let number = Int(text),
              (1...10_000).contains(number)
        else { throw S3Failure("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.") }
        if provider.capabilities.supports(.partUploads) { return try uploadBackendPart(&context, uploadId: uploadId, number: number, body: body) }
        let upload = try self.upload(uploadId, context)
        guard !upload.completing else { throw S3Failure("NoSuchUpload", "The multipart upload is being completed.") }
        let now = options.clock()
        state.withLock { $0.uploads[uploadId]?.lastActivity = now }  // a slow part keeps its upload alive
        let source = try partSource(&context, body: body, checksumAlgorithm: upload.checksumAlgorithm)
        let (next, finish, length, copied) = (source.next, source.finish, source.length, source.copied)
        let location: MultipartUpload.Location
        let written: (count: Int64, md5: String?, checksum: (algorithm: S3ChecksumAlgorithm, value: [UInt8])?)
        if let length, let offset = claimPlace(uploadId, number: number, length: length) {
            // Straight into the upload's file, at the part's place.
            location = .assembly(offset: offset)
            do {
                var position = offset
                while let chunk = try next() {
                    guard position - offset + Int64(chunk.count) <= length else {
                        throw S3Failure("IncompleteBody", "The body is longer than its declared length.")
                    }
                    try upload.assembly.file.write(chunk, at: position)
                    position += Int64(chunk.count)
                }
                written = try finish()
                guard written.count == length else { throw S3Failure("IncompleteBody", "The body ended before its declared length.") }
                // The completion's fsync then finds the parts on their way to the disk already.
                upload.assembly.file.startWriteback(offset..<position)
            } catch {
                state.withLock { _ = $0.uploads[uploadId]?.places.remove(number) }
                throw error
            }
        } else {
            let temporary = upload.folder.appendingPathComponent(".part-\(number)-\(Hex.encode(try SecureRandom.bytes(count: 8)))")
            let final = upload.folder.appendingPathComponent("part-\(number)-\(Hex.encode(try SecureRandom.bytes(count: 8)))")
            location = .file(final)
            do {
                let output = try LocalFile.createExclusive(temporary, permissions: 0o600)
                while let chunk = try next() { try output.write(chunk) }
                try output.close()
                written = try finish()
                try FileManager.default.moveItem(at: temporary, to: final)
            } catch {
                Self.removeQuietly(temporary)
                throw error
            }
        }
        context.bytesIn = copied ? 0 : written.count
        guard let md5 = written.md5 else { throw BuckiaError(.io, "The part's MD5 was not computed.") }
        let part = MultipartUpload.Part(size: written.count, md5: md5, location: location, modified: options.clock(),
            checksum: written.checksum.flatMap { $0.algorithm == upload.checksumAlgorithm ? $0.value : nil })
        let replaced: MultipartUpload.Part?? = state.withLock { state in
            guard state.uploads[uploadId]?.completing == false else { return .none }
            let previous = state.uploads[uploadId]?.parts.updateValue(part, forKey: number)
            state.uploads[uploadId]?.lastActivity = part.modified
            if case .assembly = previous?.location { state.uploads[uploadId]?.places.remove(number) }  // a file replaced it
            return .some(previous)
        }
        guard case .some(let previous) = replaced else {
            if case .file(let url) = location { Self.removeQuietly(url) }
            throw S3Failure("NoSuchUpload", "The multipart upload was aborted or completed while the part arrived.")
        }
        if case .file(let url) = previous?.location { Self.removeQuietly(url) }
        // The part's checksum in the upload's algorithm (the one sent, or computed), as S3 echoes it.
        let checksum = written.checksum.map { ($0.algorithm, Data($0.value).base64EncodedString()) }
        if copied {
            let element = checksum.map { $0.0.element($0.1) } ?? ""
            return Self.xml("<CopyPartResult><LastModified>\(Self.isoDate(part.modified))</LastModified><ETag>\"\(md5)\"</ETag>\(element)</CopyPartResult>")
        }
        var headers: [(name: String, value: String)] = [("ETag", "\"\(md5)\"")]
        if let checksum { headers.append((checksum.0.header, checksum.1)) }
        return HTTPServerResponse(status: 200, headers: headers)
    }

    /// Where a part's bytes come from, read once: `next` hands them out, `finish` gives their
    /// count, MD5 and checksum once they are all read.
    struct PartSource {
        var next: () throws -> Data?
        var finish: () throws -> (count: Int64, md5: String?, checksum: (algorithm: S3ChecksumAlgorithm, value: [UInt8])?)
        /// The length declared (the body's) or known (a copied range); nil for a body of unknown length.
        var length: Int64?
        /// Whether the bytes are copied from an object (UploadPartCopy) rather than sent.
        var copied: Bool
    }

    /// The part's bytes: the body, or with x-amz-copy-source (UploadPartCopy) a range of an
    /// object the grants let this user read, read from the backend; each part's checksum is
    /// computed in the upload's algorithm.
    func partSource(_ context: inout RequestContext, body: HTTPRequestBody, checksumAlgorithm: S3ChecksumAlgorithm?) throws -> PartSource {
        let copied = context.request.values("x-amz-copy-source").isEmpty ? nil : try copySource(context)
        var next: () throws -> Data?
        var finish: () throws -> (count: Int64, md5: String?, checksum: (algorithm: S3ChecksumAlgorithm, value: [UInt8])?)
        let length: Int64?
        if let (source, file) = copied {
            context.operation = "UploadPartCopy"
            let range = try Self.copyRange(try context.header("x-amz-copy-source-range"), size: file.size)
            guard range.upperBound - range.lowerBound <= options.maximumPartSize else {
                throw S3Failure("InvalidArgument", "A copied part may be at most \(options.maximumPartSize) bytes.")
            }
            let conditional = provider.capabilities.supports(.conditionalRead) ? file.etag : nil
            let stream = try Blocking.wait { [provider] in
                try await provider.openRead(remotePath: source, options: ReadOptions(range: range.isEmpty ? nil : range, ifMatch: conditional))
            }.bytes
            let hasher = try DigestHasher(.md5)
            let checksum = try checksumAlgorithm.map(S3ChecksumComputer.init)
            var count: Int64 = 0
            next = {
                guard !range.isEmpty, let chunk = try Blocking.wait({ try await stream.next() }) else { return nil }
                hasher.update(chunk)
                checksum?.update(chunk)
                count += Int64(chunk.count)
                return chunk
            }
            finish = { (count, hasher.finalize().hex, checksum.map { ($0.algorithm, $0.finalize()) }) }
            length = range.upperBound - range.lowerBound
        } else {
            let body = try S3UploadBody(context, body: body, maximumSize: options.maximumPartSize, computeMD5: true, computing: checksumAlgorithm)
            next = { try body.next() }
            finish = { (body.count, body.md5?.hex, body.computedChecksum) }
            length = body.expectedLength
        }
        return PartSource(next: next, finish: finish, length: length, copied: copied != nil)
    }

    /// Takes part `number`'s place in the upload's file when a part of `length` bytes fits
    /// there, and returns its offset; nil sends the part to a file of its own: the place is
    /// taken (the part sent again), the length differs from the stride (a part after a
    /// shorter one), or it lies past the largest object S3 stores.
    private func claimPlace(_ uploadId: String, number: Int, length: Int64) -> Int64? {
        guard length > 0 else { return nil }
        return state.withLock { state -> Int64? in
            guard var upload = state.uploads[uploadId], !upload.completing, !upload.places.contains(number) else { return nil }
            let stride = upload.stride ?? length
            guard length <= stride else { return nil }
            let (offset, overflow) = Int64(number - 1).multipliedReportingOverflow(by: stride)
            guard !overflow, offset <= Self.largestObject - length else { return nil }
            upload.stride = stride
            upload.places.insert(number)
            state.uploads[uploadId] = upload
            return offset
        }
    }

    /// S3's largest object, 5 TiB: no part is placed beyond it.
    static let largestObject: Int64 = 5 << 40

    /// Aborts every upload, of any user, that has had no part for longer than
    /// ``S3GatewayOptions/abandonedUploadLifetime``, removing its staged parts; one being
    /// completed is left alone.
    func abortAbandonedUploads() {
        guard let lifetime = options.abandonedUploadLifetime else { return }
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        let cutoff = options.clock().addingTimeInterval(-seconds)
        let abandoned = state.withLock { state -> [MultipartUpload] in
            let old = state.uploads.values.filter { !$0.completing && $0.lastActivity < cutoff }
            for upload in old { state.uploads.removeValue(forKey: upload.id) }
            return old
        }
        for upload in abandoned { Self.removeQuietly(upload.folder) }
    }

    /// Aborts every upload into `bucket` that is not being completed (the bucket is going);
    /// one being completed makes the deletion wait for it: `OperationAborted`.
    func abortUploads(inBucket bucket: String) throws {
        if provider.capabilities.supports(.partUploads) { return try abortBackendUploads(inBucket: bucket) }
        let removed = try state.withLock { state -> [MultipartUpload] in
            let uploads = state.uploads.values.filter { $0.bucket == bucket }
            guard !uploads.contains(where: \.completing) else {
                throw S3Failure("OperationAborted", "A multipart upload into the bucket is being completed; try again.", status: 409)
            }
            for upload in uploads { state.uploads.removeValue(forKey: upload.id) }
            return uploads
        }
        for upload in removed { Self.removeQuietly(upload.folder) }
    }

    /// `x-amz-copy-source-range: bytes=FIRST-LAST` (both given, inside the object), or the whole
    /// object when absent.
    static func copyRange(_ header: String?, size: Int64) throws -> Range<Int64> {
        guard let header else { return 0..<size }
        let invalid = S3Failure("InvalidArgument", "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
        let spec = header.trimmingCharacters(in: .whitespaces)
        guard spec.hasPrefix("bytes=") else { throw invalid }
        let parts = spec.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 18 && $0.utf8.allSatisfy { (48...57).contains($0) } }),
              let first = Int64(parts[0]), let last = Int64(parts[1]), first <= last
        else { throw invalid }
        guard last < size else { throw S3Failure("InvalidRange", "The requested range is not satisfiable.") }
        return first..<(last + 1)
    }

    func abortUpload(_ context: RequestContext, uploadId: String) throws -> HTTPServerResponse {
        _ = try remoteKey(context, for: .write)
        if provider.capabilities.supports(.partUploads) { return try abortBackendUpload(context, uploadId: uploadId) }
        let upload = try self.upload(uploadId, context)
        let removed = state.withLock { state -> Bool in
            guard state.uploads[uploadId]?.completing == false else { return false }
            state.uploads.removeValue(forKey: uploadId)
            return true
        }
        guard removed else { throw S3Failure("OperationAborted", "The upload is being completed.") }
        Self.removeQuietly(upload.folder)
        return HTTPServerResponse(status: 204)
    }

    func listParts(_ context: RequestContext, uploadId: String) throws -> HTTPServerResponse {
        _ = try remoteKey(context, for: .write)
        let parts: [ListedPart]
        let algorithm: S3ChecksumAlgorithm?
        let composite: Bool
        if provider.capabilities.supports(.partUploads) {
            let record = try backendUpload(uploadId, context)
            parts = try backendParts(context, uploadId: uploadId, record: record)
            (algorithm, composite) = (record.algorithm, record.composite)
        } else {
            let upload = try self.upload(uploadId, context)
            parts = upload.parts.map { ListedPart(number: $0.key, modified: $0.value.modified, etag: $0.value.md5, size: $0.value.size, checksum: $0.value.checksum) }
            (algorithm, composite) = (upload.checksumAlgorithm, upload.compositeChecksum)
        }
        let byNumber = Dictionary(parts.map { ($0.number, $0) }, uniquingKeysWith: { $1 })
        var maxParts = 1000
        if let text = context.query["max-parts"] {
            guard text.utf8.count <= 6, let value = Int(text), value >= 0 else { throw S3Failure("InvalidArgument", "max-parts must be a number.") }
            maxParts = min(value, 1000)
        }
        let marker = context.query["part-number-marker"].flatMap { Int($0) } ?? 0
        let numbers = byNumber.keys.sorted().filter { $0 > marker }
        let shown = numbers.prefix(maxParts)
        let truncated = numbers.count > shown.count
        var xml = "<ListPartsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><UploadId>\(uploadId)</UploadId>"
        xml += "<PartNumberMarker>\(marker)</PartNumberMarker><NextPartNumberMarker>\(shown.last ?? marker)</NextPartNumberMarker><MaxParts>\(maxParts)</MaxParts><IsTruncated>\(truncated)</IsTruncated>"
        if let algorithm {
            xml += "<ChecksumAlgorithm>\(algorithm.rawValue.uppercased())</ChecksumAlgorithm><ChecksumType>\(composite ? "COMPOSITE" : "FULL_OBJECT")</ChecksumType>"
        }
        for number in shown {
            guard let part = byNumber[number] else { continue }
            var checksumElement = ""
            if let algorithm, let value = part.checksum { checksumElement = algorithm.element(Data(value).base64EncodedString()) }
            xml += "<Part><PartNumber>\(number)</PartNumber><LastModified>\(Self.isoDate(part.modified))</LastModified><ETag>\"\(part.etag)\"</ETag><Size>\(part.size)</Size>\(checksumElement)</Part>"
        }
        return Self.xml(xml + "</ListPartsResult>")
    }

    func listUploads(_ context: RequestContext) throws -> HTTPServerResponse {
        try requireBucketVisible(context)
        try requireBucket(context.bucket)
        let prefix = context.query["prefix"] ?? ""
        var maxUploads = 1000
        if let text = context.query["max-uploads"] {
            guard text.utf8.count <= 6, let value = Int(text), value >= 0 else { throw S3Failure("InvalidArgument", "max-uploads must be a number.") }
            maxUploads = min(value, 1000)
        }
        let keyMarker = context.query["key-marker"] ?? ""
        let idMarker = context.query["upload-id-marker"] ?? ""
        let principal = context.principal
        let all: [(key: String, id: String, owner: String, initiated: Date)]
        if provider.capabilities.supports(.partUploads) {
            all = try backendUploads(inBucket: context.bucket).map { ($0.record.key, $0.id, $0.record.owner, Date(timeIntervalSince1970: $0.record.initiated)) }
        } else {
            all = state.withLock { Array($0.uploads.values) }.filter { $0.bucket == context.bucket }.map { ($0.key, $0.id, $0.owner, $0.initiated) }
        }
        let uploads = all
            .filter { $0.owner == principal?.name ?? "" && $0.key.utf8HasPrefix(prefix) }
            .filter { principal?.grants.permits(.write, key: context.bucket + "/" + $0.key) == true }
            .sorted { ($0.key, $0.id) < ($1.key, $1.id) }
            .filter { keyMarker.isEmpty || $0.key > keyMarker || ($0.key == keyMarker && !idMarker.isEmpty && $0.id > idMarker) }
        let shown = uploads.prefix(maxUploads)
        let truncated = uploads.count > shown.count
        var xml = "<ListMultipartUploadsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(context.bucket.xmlEscaped)</Bucket>"
        xml += "<KeyMarker>\(keyMarker.xmlEscaped)</KeyMarker><UploadIdMarker>\(idMarker.xmlEscaped)</UploadIdMarker><Prefix>\(prefix.xmlEscaped)</Prefix>"
        if truncated, let last = shown.last {
            xml += "<NextKeyMarker>\(last.key.xmlEscaped)</NextKeyMarker><NextUploadIdMarker>\(last.id)</NextUploadIdMarker>"
        }
        xml += "<MaxUploads>\(maxUploads)</MaxUploads><IsTruncated>\(truncated)</IsTruncated>"
        for upload in shown {
            let owner = upload.owner.xmlEscaped
            xml += "<Upload><Key>\(upload.key.xmlEscaped)</Key><UploadId>\(upload.id)</UploadId><Initiator><ID>\(owner)</ID><DisplayName>\(owner)</DisplayName></Initiator>"
            xml += "<Owner><ID>\(owner)</ID><DisplayName>\(owner)</DisplayName></Owner><StorageClass>STANDARD</StorageClass><Initiated>\(Self.isoDate(upload.initiated))</Initiated></Upload>"
        }
        return Self.xml(xml + "</ListMultipartUploadsResult>")
    }

    /// Removes a staging file or folder; a failure leaves it for ``close()``, which removes the whole staging folder.
    static func removeQuietly(_ url: URL) {
        do {
            try FileManager.default.removeItem(at: url)
        } catch {
            // Left for close(): the staging folder goes as a whole when the gateway stops.
        }
    }
}
