import BuckiaCore
import BuckiaSecurity
import BuckiaSigV4
import Foundation

extension S3Gateway {
    /// The upload options a PUT or a multipart start asks for: type, metadata, mtime, condition.
    /// A delivery's condition is the gateway's own: create-only (`If-None-Match: *` where the
    /// backend has conditional writes), and `If-Match`, which would replace, is refused.
    func uploadOptions(_ context: RequestContext, delivery: Bool = false) throws -> UploadOptions {
        var options = try Self.storedAttributes(context.request.headers)
        let ifNoneMatch = try context.header("if-none-match")
        let ifMatch = try context.header("if-match")
        if delivery {
            guard ifMatch == nil else { throw S3Failure("AccessDenied", "Access Denied: a delivery creates a new object, and If-Match would replace one.") }
            // Create-only must hold whichever gateway answers, so it is the backend's own atomic
            // write; a backend without one (B2, Bunny) cannot take deliveries.
            guard provider.capabilities.supports(.conditionalWrite) else {
                throw S3Failure.unsupportedFeature(
                    "a delivery over this backend (\(provider.providerType.rawValue)): it has no conditional writes, so a delivery could replace another's file when two writers race")
            }
            options.condition = .ifNoneMatch
        } else if ifNoneMatch != nil || ifMatch != nil {
            if let ifNoneMatch {
                guard ifNoneMatch.trimmingCharacters(in: .whitespaces) == "*", ifMatch == nil else {
                    throw S3Failure.unsupportedFeature("If-None-Match other than * on a write")
                }
                options.condition = .ifNoneMatch
            } else if let ifMatch {
                options.condition = .ifMatch(try backendTag(ifMatch))
            }
        }
        for unsupported in ["x-amz-server-side-encryption", "x-amz-object-lock-mode", "x-amz-website-redirect-location", "x-amz-tagging"]
        where !context.request.values(unsupported).isEmpty {
            throw S3Failure.unsupportedFeature(unsupported)
        }
        try Self.refuseAccessControl(context)
        if let storageClass = try context.header("x-amz-storage-class"), storageClass != "STANDARD" {
            throw S3Failure.unsupportedFeature("the storage class \(storageClass) (every object here is STANDARD)")
        }
        // Metadata or a condition the backend cannot keep is refused by the provider contract's
        // own check (BuckiaError.unsupported, answered as NotImplemented) before any byte is read.
        try options.checkSupported(by: provider)
        return options
    }

    /// What a write stores besides its bytes, from its headers (a PUT) or its form's fields
    /// (a POST), names in any letter case: the content type, content headers and metadata, each
    /// kept as sent. rclone's `mtime` and `md5chksum` also give the object its time and a known
    /// MD5, which is checked against the bytes.
    static func storedAttributes(_ fields: [(name: String, value: String)]) throws -> UploadOptions {
        func single(_ name: String) throws -> String? {
            let values = fields.filter { $0.name.lowercased() == name }
            guard values.count <= 1 else { throw S3Failure("InvalidArgument", "The header \(name) is sent more than once.") }
            return values.first?.value
        }
        var options = UploadOptions()
        options.contentType = try single("content-type")
        for name in ContentHeaders.names {
            guard var value = try single(name) else { continue }
            if name == "content-encoding" {
                // `aws-chunked` names how this request's body travels (S3UploadBody), not a
                // coding of the object: S3 stores what is left of the list.
                value = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty && $0.lowercased() != "aws-chunked" }.joined(separator: ",")
                if value.isEmpty { continue }
            }
            options.contentHeaders[name] = value
        }
        // Metadata is kept as the client wrote it, rclone's names included; those also give
        // the object its time and a known MD5, checked as the body is read.
        for (name, value) in fields {
            let lower = name.lowercased()
            guard lower.hasPrefix("x-amz-meta-") else { continue }
            let key = String(lower.dropFirst("x-amz-meta-".count))
            guard key != S3ObjectRecord.metadataName else {
                throw S3Failure("InvalidArgument", "x-amz-meta-\(key) is kept by the gateway itself (the parts and checksum of an object) and cannot be set.")
            }
            guard options.metadata.updateValue(value, forKey: key) == nil else {
                throw S3Failure("InvalidArgument", "The metadata \(key) is sent twice.")
            }
            switch key {
            case RcloneMetadata.mtime:
                guard let date = RcloneMetadata.parseMtime(value) else { throw S3Failure("InvalidArgument", "x-amz-meta-mtime is not a number of seconds.") }
                options.modificationDate = date
            case RcloneMetadata.md5:
                guard let bytes = Data(base64Encoded: value), bytes.count == 16 else {
                    throw S3Failure("InvalidArgument", "x-amz-meta-md5chksum is not a base64 MD5.")
                }
                options.knownChecksums[.md5] = Hex.encode(bytes)
            default:
                break
            }
        }
        return options
    }

    /// Refuses access control lists, which the gateway does not keep (its grants decide who
    /// may do what): a canned ACL other than `private`, and any `x-amz-grant-*` header, answer
    /// `NotImplemented` rather than a success that stored nothing of them.
    static func refuseAccessControl(_ context: RequestContext) throws {
        if let acl = try context.header("x-amz-acl"), acl != "private" {
            throw S3Failure.unsupportedFeature("the canned ACL \(acl) (access here is by the gateway's grants; only private is accepted)")
        }
        if let grant = context.request.headers.first(where: { $0.name.lowercased().hasPrefix("x-amz-grant-") }) {
            throw S3Failure.unsupportedFeature("\(grant.name.lowercased()) (access here is by the gateway's grants)")
        }
    }

    /// The backend's form of a tag a client names in `If-Match`: quoted, as the gateway hands
    /// tags out (``etag(of:)``).
    func backendTag(_ tag: String) throws -> String {
        let bare = Self.bareTag(tag)
        guard !bare.isEmpty, bare != "*" else { throw S3Failure.unsupportedFeature("If-Match: * on a write") }
        return "\"\(bare)\""
    }

    func putObject(_ context: inout RequestContext, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let (key, delivery) = try writeTarget(context)
        try requireBucket(context.bucket)
        // A delivery is create-only whatever the client sent, by the backend's conditional write
        // (two deliveries through this gateway to one name: the second fails at once).
        var options = try uploadOptions(context, delivery: delivery)
        // A declared MD5 is checked in the pass that reads the body, not in another by the backend.
        let upload = try S3UploadBody(
            context, body: body, maximumSize: delivery ? min(self.options.maximumPartSize, self.options.delivery.maximumSize) : self.options.maximumPartSize,
            declaredMD5: options.knownChecksums[.md5])
        options.knownChecksums = [:]
        // A checksum sent in a header is known before the body, so it is stored with the object
        // (checked as the body passes: a wrong one stores nothing). One in a trailer comes after
        // the metadata has gone to the backend, so it is checked, not kept.
        if let sent = upload.headerChecksum, provider.capabilities.supports(.userMetadata) {
            options.metadata[S3ObjectRecord.metadataName] = S3ObjectRecord(checksum: S3StoredChecksum(algorithm: sent.algorithm, value: sent.value, composite: false)).text
        }
        if delivery {
            guard upload.expectedLength != nil else {
                throw S3Failure("MissingContentLength", "A delivery declares its length (Content-Length), which must be at most \(self.options.delivery.maximumSize) bytes.", status: 411)
            }
            let claimed = state.withLock { $0.deliveries.insert(key.rawValue).inserted }
            guard claimed else { throw S3Failure("PreconditionFailed", "At least one of the pre-conditions you specified did not hold.") }
        }
        defer { if delivery { _ = state.withLock { $0.deliveries.remove(key.rawValue) } } }
        let stored = try streamUpload(upload) { [provider, options] stream in
            try await provider.upload(from: stream, remotePath: key, options: options)
        }
        context.bytesIn = upload.count
        var headers: [(name: String, value: String)] = [("ETag", Self.etag(of: stored))]
        if let checked = upload.checkedChecksum { headers.append((checked.name, checked.value)) }
        return HTTPServerResponse(status: 200, headers: headers)
    }

    func deleteObject(_ context: RequestContext) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .delete)
        try Blocking.wait { [provider] in try await provider.deleteFile(remotePath: key) }
        return HTTPServerResponse(status: 204)
    }

    /// The object `x-amz-copy-source` names (`bucket/key`, percent-encoded), checked for `read`
    /// against the grants, as it is now, its copy-source conditions checked.
    func copySource(_ context: RequestContext) throws -> (key: ObjectKey, file: RemoteFile) {
        guard let sourceHeader = try context.header("x-amz-copy-source") else { throw S3Failure("InvalidArgument", "x-amz-copy-source is missing.") }
        var sourceText = sourceHeader
        if let question = sourceText.firstIndex(of: "?") {
            guard sourceText[question...].hasPrefix("?versionId=null") || sourceText[question...] == "?" else {
                throw S3Failure.unsupportedFeature("copying a version")
            }
            sourceText = String(sourceText[..<question])
        }
        guard let decoded = Self.percentDecoded(sourceText[...]) else { throw S3Failure("InvalidArgument", "x-amz-copy-source cannot be decoded.") }
        let trimmed = decoded.hasPrefix("/") ? decoded.dropFirst() : decoded[...]
        guard let slash = trimmed.firstIndex(of: "/"), slash > trimmed.startIndex, trimmed.index(after: slash) < trimmed.endIndex else {
            throw S3Failure("InvalidArgument", "x-amz-copy-source must be bucket/key.")
        }
        let sourceBucket = String(trimmed[..<slash])
        try Self.checkBucketName(sourceBucket)
        let source = try remoteKey(context, bucket: sourceBucket, key: String(trimmed[trimmed.index(after: slash)...]), for: .read)
        guard let file = try Blocking.wait({ [provider] in try await provider.stat(remotePath: source) }) else {
            // A source bucket that does not exist is NoSuchBucket, as S3 answers.
            try requireBucket(sourceBucket)
            throw S3Failure("NoSuchKey", "The specified key does not exist.")
        }
        _ = try checkConditions(context, file: file, etag: Self.etag(of: file), prefix: "x-amz-copy-source-")
        return (source, file)
    }

    func copyObject(_ context: inout RequestContext) throws -> HTTPServerResponse {
        let (source, file) = try copySource(context)
        let destination = try remoteKey(context, for: .write)
        try requireBucket(context.bucket)
        let directive = try context.header("x-amz-metadata-directive")?.uppercased() ?? "COPY"
        guard directive == "COPY" || directive == "REPLACE" else { throw S3Failure("InvalidArgument", "x-amz-metadata-directive must be COPY or REPLACE.") }
        var options = directive == "REPLACE" ? try uploadOptions(context) : UploadOptions()
        options.knownChecksums = [:]
        // The record describes the bytes (their parts, their checksum), which a copy keeps.
        let record = try objectRecord(file)
        if !record.isEmpty { options.metadata[S3ObjectRecord.metadataName] = record.text }
        if directive == "COPY" {
            options = UploadOptions(
                contentType: file.contentType, modificationDate: file.modificationDate, metadata: file.metadata, contentHeaders: file.contentHeaders)
            if let condition = try uploadOptions(context).condition { options.condition = condition }
        }
        let provider = self.provider
        let capabilities = provider.capabilities
        let stored: RemoteFile
        if source == destination && directive == "COPY" {
            throw S3Failure(
                "InvalidRequest",
                "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
        } else if source == destination, options.metadata.filter({ $0.key != RcloneMetadata.mtime }) == file.metadata.filter({ $0.key != RcloneMetadata.mtime }),
                  options.contentType == file.contentType, options.contentHeaders == file.contentHeaders, options.condition == nil,
                  let date = options.modificationDate, options.metadata[RcloneMetadata.mtime].map({ $0 == RcloneMetadata.formatMtime(date) }) ?? true,
                  capabilities.supports(.setModificationTime)
        {
            stored = try Blocking.wait { try await provider.setModificationTime(remotePath: source, to: date) }
        } else if directive == "COPY", options.condition == nil, capabilities.supports(.serverSideCopy) {
            stored = try Blocking.wait { try await provider.copyFile(from: source, to: destination) }
            // A backend's copy keeps the metadata, but not a sidecar: the copy gets its own.
            if !record.isEmpty, S3ObjectRecord(metadata: stored.metadata).isEmpty { try storeSidecar(record, for: stored) }
        } else {
            let conditional = capabilities.supports(.conditionalRead) ? file.etag : nil
            let finalOptions = options
            stored = try Blocking.wait {
                let read = try await provider.openRead(remotePath: source, options: ReadOptions(ifMatch: conditional))
                return try await provider.upload(from: read.bytes, remotePath: destination, options: finalOptions)
            }
        }
        let modified = stored.serverModified ?? stored.modificationDate ?? options.modificationDate ?? Date()
        return Self.xml(
            "<CopyObjectResult><LastModified>\(Self.isoDate(modified))</LastModified><ETag>\(Self.etag(of: stored).xmlEscaped)</ETag></CopyObjectResult>")
    }

    func deleteObjects(_ context: inout RequestContext, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let upload = try S3UploadBody(context, body: body, maximumSize: 2 << 20)
        var data = Data()
        while let chunk = try upload.next() { data.append(chunk) }
        context.bytesIn = upload.count
        let document = try Self.parseXML(data, what: "DeleteObjects")
        guard document.name == "Delete" else { throw S3Failure("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.") }
        let objects = document.children("Object")
        guard objects.count <= 1000 else { throw S3Failure("MalformedXML", "A DeleteObjects request may name at most 1,000 keys.") }
        let quiet = document.value("Quiet")?.lowercased() == "true"
        var deleted: [String] = []
        var errors: [(key: String, code: String, message: String)] = []
        var allowed: [(String, ObjectKey)] = []
        for object in objects {
            guard let name = object.value("Key") else { throw S3Failure("MalformedXML", "An Object element has no Key.") }
            if object.value("VersionId") != nil {
                errors.append((name, "NotImplemented", "Versions are not implemented."))
                continue
            }
            do {
                allowed.append((name, try remoteKey(context, key: name, for: .delete)))
            } catch let failure as S3Failure {
                errors.append((name, failure.code, failure.message))
            }
        }
        let keys = allowed.map(\.1)
        if !keys.isEmpty {
            do {
                try Blocking.wait { [provider] in try await provider.deleteFiles(keys) }
                deleted = allowed.map(\.0)
            } catch {
                let failure = S3Failure(error)
                errors += allowed.map { ($0.0, failure.code, failure.message) }
            }
        }
        var xml = "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        if !quiet {
            for name in deleted { xml += "<Deleted><Key>\(name.xmlEscaped)</Key></Deleted>" }
        }
        for error in errors {
            xml += "<Error><Key>\(error.key.xmlEscaped)</Key><Code>\(error.code.xmlEscaped)</Code><Message>\(error.message.xmlEscaped)</Message></Error>"
        }
        return Self.xml(xml + "</DeleteResult>")
    }

    static func parseXML(_ data: Data, what: String) throws -> XMLNode {
        do {
            return try XMLNode.parse(data, what: what, from: "client")
        } catch {
            throw S3Failure("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
        }
    }
}
