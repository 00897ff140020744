import BuckiaCore
import BuckiaSecurity
import BuckiaSigV4
import Foundation

/// A multipart upload under way: its parts wait as files in the gateway's staging folder
/// until CompleteMultipartUpload streams them, in order, into one backend upload.
struct MultipartUpload: Sendable {
    struct Part: Sendable {
        var size: Int64
        var md5: String
        var file: URL
        var modified: Date
    }

    var id: String
    var bucket: String
    /// The key in the bucket, as the client named it.
    var key: String
    var remoteKey: ObjectKey
    /// Who started it: only they may add parts, list, complete or abort it.
    var owner: String
    var options: UploadOptions
    var initiated: Date
    var folder: URL
    var parts: [Int: Part] = [:]
    /// Set while CompleteMultipartUpload streams the parts: no part may change then.
    var completing = false
}

extension S3Gateway {
    func createUpload(_ context: inout RequestContext) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .write)
        try requireBucket(context.bucket)
        var uploadOptions = try uploadOptions(context)
        uploadOptions.condition = nil  // a condition is CompleteMultipartUpload's to give
        let id = Hex.encode(try SecureRandom.bytes(count: 16))
        let folder = staging.appendingPathComponent(id, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw BuckiaError.wrapping(error, operation: "CreateMultipartUpload", path: folder.path)
        }
        let upload = MultipartUpload(
            id: id, bucket: context.bucket, key: context.key, remoteKey: key, owner: context.principal?.name ?? "", options: uploadOptions,
            initiated: options.clock(), folder: folder)
        state.withLock { $0.uploads[id] = upload }
        return Self.xml(
            "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><UploadId>\(id)</UploadId></InitiateMultipartUploadResult>"
        )
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
        let upload = try self.upload(uploadId, context)
        guard !upload.completing else { throw S3Failure("NoSuchUpload", "The multipart upload is being completed.") }
        // The part's bytes: the body, or with x-amz-copy-source (UploadPartCopy) a range of an
        // object the grants let this user read, read from the backend.
        let copied = context.request.values("x-amz-copy-source").isEmpty ? nil : try copySource(context)
        var next: () throws -> Data?
        var finish: () throws -> (count: Int64, md5: String?, checksum: (name: String, value: String)?)
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
            var count: Int64 = 0
            next = {
                guard !range.isEmpty, let chunk = try Blocking.wait({ try await stream.next() }) else { return nil }
                hasher.update(chunk)
                count += Int64(chunk.count)
                return chunk
            }
            finish = { (count, hasher.finalize().hex, nil) }
        } else {
            let body = try S3UploadBody(context, body: body, maximumSize: options.maximumPartSize, computeMD5: true)
            next = { try body.next() }
            finish = { (body.count, body.md5?.hex, body.checkedChecksum) }
        }
        let temporary = upload.folder.appendingPathComponent(".part-\(number)-\(Hex.encode(try SecureRandom.bytes(count: 8)))")
        let final = upload.folder.appendingPathComponent("part-\(number)-\(Hex.encode(try SecureRandom.bytes(count: 8)))")
        let written: (count: Int64, md5: String?, checksum: (name: String, value: String)?)
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
        context.bytesIn = copied == nil ? written.count : 0
        guard let md5 = written.md5 else { throw BuckiaError(.io, "The part's MD5 was not computed.") }
        let part = MultipartUpload.Part(size: written.count, md5: md5, file: final, modified: options.clock())
        let replaced: MultipartUpload.Part?? = state.withLock { state in
            guard state.uploads[uploadId]?.completing == false else { return .none }
            return .some(state.uploads[uploadId]?.parts.updateValue(part, forKey: number))
        }
        guard case .some(let previous) = replaced else {
            Self.removeQuietly(final)
            throw S3Failure("NoSuchUpload", "The multipart upload was aborted or completed while the part arrived.")
        }
        if let previous { Self.removeQuietly(previous.file) }
        if copied != nil {
            return Self.xml("<CopyPartResult><LastModified>\(Self.isoDate(part.modified))</LastModified><ETag>\"\(md5)\"</ETag></CopyPartResult>")
        }
        var headers: [(name: String, value: String)] = [("ETag", "\"\(md5)\"")]
        if let checked = written.checksum { headers.append((checked.name, checked.value)) }
        return HTTPServerResponse(status: 200, headers: headers)
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

    func completeUpload(_ context: inout RequestContext, uploadId: String, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .write)
        let request = try S3UploadBody(context, body: body, maximumSize: 4 << 20)
        var data = Data()
        while let chunk = try request.next() { data.append(chunk) }
        context.bytesIn = request.count
        let document = try Self.parseXML(data, what: "CompleteMultipartUpload")
        guard document.name == "CompleteMultipartUpload" else {
            throw S3Failure("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
        }
        var listed: [(number: Int, etag: String)] = []
        for part in document.children("Part") {
            guard let numberText = part.value("PartNumber"), let number = Int(numberText.trimmingCharacters(in: .whitespacesAndNewlines)),
                  let etag = part.value("ETag")
            else { throw S3Failure("MalformedXML", "Each Part needs a PartNumber and an ETag.") }
            listed.append((number, etag))
        }
        guard !listed.isEmpty else { throw S3Failure("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.") }
        for (previous, next) in zip(listed, listed.dropFirst()) where next.number <= previous.number {
            throw S3Failure("InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number.")
        }
        var options = try uploadOptions(context)  // the condition, if any
        // Take the upload for completing: parts arriving now are refused.
        let claimed: MultipartUpload? = try state.withLock { state in
            guard var upload = state.uploads[uploadId], upload.bucket == context.bucket, upload.key == context.key,
                  upload.owner == context.principal?.name
            else { return nil }
            guard !upload.completing else { throw S3Failure("OperationAborted", "The upload is already being completed.") }
            upload.completing = true
            state.uploads[uploadId] = upload
            return upload
        }
        guard let upload = claimed else { throw S3Failure("NoSuchUpload", "The specified multipart upload does not exist.") }
        let release = { [state] in state.withLock { $0.uploads[uploadId]?.completing = false } }
        var files: [URL] = []
        do {
            for (index, item) in listed.enumerated() {
                guard let part = upload.parts[item.number], Self.bareTag(item.etag) == part.md5 else {
                    throw S3Failure(
                        "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
                }
                if index < listed.count - 1 && part.size < self.options.minimumPartSize {
                    throw S3Failure("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
                }
                files.append(part.file)
            }
        } catch {
            release()
            throw error
        }
        options.contentType = upload.options.contentType
        options.modificationDate = upload.options.modificationDate
        options.metadata = upload.options.metadata
        options.knownChecksums = listed.count == 1 ? upload.options.knownChecksums : [:]
        let stream = Self.concatenation(files)
        let finalOptions = options
        let stored: RemoteFile
        do {
            stored = try Blocking.wait { [provider] in try await provider.upload(from: stream, remotePath: key, options: finalOptions) }
        } catch {
            release()
            throw error
        }
        state.withLock { _ = $0.uploads.removeValue(forKey: uploadId) }
        Self.removeQuietly(upload.folder)
        return Self.xml(
            "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>/\(context.bucket.xmlEscaped)/\(context.key.xmlEscaped)</Location><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><ETag>\(Self.etag(of: stored).xmlEscaped)</ETag></CompleteMultipartUploadResult>"
        )
    }

    func abortUpload(_ context: RequestContext, uploadId: String) throws -> HTTPServerResponse {
        _ = try remoteKey(context, for: .write)
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
        let upload = try self.upload(uploadId, context)
        var maxParts = 1000
        if let text = context.query["max-parts"] {
            guard text.utf8.count <= 6, let value = Int(text), value >= 0 else { throw S3Failure("InvalidArgument", "max-parts must be a number.") }
            maxParts = min(value, 1000)
        }
        let marker = context.query["part-number-marker"].flatMap { Int($0) } ?? 0
        let numbers = upload.parts.keys.sorted().filter { $0 > marker }
        let shown = numbers.prefix(maxParts)
        let truncated = numbers.count > shown.count
        var xml = "<ListPartsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><UploadId>\(uploadId)</UploadId>"
        xml += "<PartNumberMarker>\(marker)</PartNumberMarker><NextPartNumberMarker>\(shown.last ?? marker)</NextPartNumberMarker><MaxParts>\(maxParts)</MaxParts><IsTruncated>\(truncated)</IsTruncated>"
        for number in shown {
            guard let part = upload.parts[number] else { continue }
            xml += "<Part><PartNumber>\(number)</PartNumber><LastModified>\(Self.isoDate(part.modified))</LastModified><ETag>\"\(part.md5)\"</ETag><Size>\(part.size)</Size></Part>"
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
        let uploads = state.withLock { Array($0.uploads.values) }
            .filter { $0.bucket == context.bucket && $0.owner == principal?.name && $0.key.utf8HasPrefix(prefix) }
            .filter { principal?.grants.permits(.write, key: $0.bucket + "/" + $0.key) == true }
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

    /// The files' bytes one after another, read a piece at a time.
    static func concatenation(_ files: [URL]) -> ByteStream {
        final class Cursor: @unchecked Sendable {
            var index = 0
            var current: ByteStream?
        }
        let cursor = Cursor()  // one consumer at a time, as ByteStream promises
        return ByteStream(
            next: {
                while true {
                    if cursor.current == nil {
                        guard cursor.index < files.count else { return nil }
                        cursor.current = try ByteStream.file(files[cursor.index])
                        cursor.index += 1
                    }
                    if let chunk = try await cursor.current?.next() { return chunk }
                    cursor.current = nil
                }
            },
            onCancel: { cursor.current?.cancel() })
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
