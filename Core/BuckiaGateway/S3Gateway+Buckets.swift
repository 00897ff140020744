import BuckiaCore
import BuckiaSecurity
import BuckiaSigV4
import Foundation

extension S3Gateway {
    // MARK: - Buckets

    func listBuckets(_ context: RequestContext) throws -> HTTPServerResponse {
        let root = options.root
        let folders = try Blocking.wait { [provider] in
            var names: [String] = []
            for try await entry in provider.list(ListOptions(prefix: root, recursive: false)) {
                if case .directory(let prefix) = entry, let name = prefix.utf8Dropping(prefix: root), name.hasSuffix("/") {
                    names.append(String(name.dropLast()))
                }
            }
            return names
        }
        let records = try bucketRecords()
        var names = Set(folders).union(records.keys).filter { bucketVisible(context.principal, $0) }
        names = names.filter { name in
            do {
                try Self.checkBucketName(name)
                return true
            } catch {
                return false
            }
        }
        var sorted = names.sorted(by: { $0.utf8Precedes($1) })
        if let token = context.query["continuation-token"] {
            guard let bytes = Base64URL.decode(token), let after = String(bytes: bytes, encoding: .utf8) else {
                throw S3Failure("InvalidArgument", "The continuation token provided is incorrect")
            }
            sorted = sorted.filter { after.utf8Precedes($0) }
        }
        if let prefix = context.query["prefix"] { sorted = sorted.filter { $0.utf8HasPrefix(prefix) } }
        var truncated = false
        if let text = context.query["max-buckets"] {
            guard text.utf8.count <= 5, text.utf8.allSatisfy({ (48...57).contains($0) }), let limit = Int(text), (1...10_000).contains(limit) else {
                throw S3Failure("InvalidArgument", "max-buckets must be an integer between 1 and 10000.")
            }
            truncated = sorted.count > limit
            sorted = Array(sorted.prefix(limit))
        }
        var xml = "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\(Self.ownerXML(context))<Buckets>"
        for name in sorted {
            // A bucket made by CreateBucket has its record's date; a folder made another way
            // has its own where the backend keeps folders, else none known (the epoch).
            var created = records[name]
            if created == nil, provider.capabilities.supports(.folders), let key = ObjectKey(ifValid: root + name) {
                created = try Blocking.wait { [provider] in try await provider.folderDate(key) }
            }
            let date = created ?? Date(timeIntervalSince1970: 0)
            xml += "<Bucket><Name>\(name.xmlEscaped)</Name><CreationDate>\(Self.isoDate(date))</CreationDate></Bucket>"
        }
        xml += "</Buckets>"
        if truncated, let last = sorted.last { xml += "<ContinuationToken>\(Base64URL.encode(Data(last.utf8)))</ContinuationToken>" }
        if let prefix = context.query["prefix"] { xml += "<Prefix>\(prefix.xmlEscaped)</Prefix>" }
        return Self.xml(xml + "</ListAllMyBucketsResult>")
    }

    /// S3's rules for a new bucket's name: 3 to 63 lowercase letters, digits, `.` and `-`,
    /// starting and ending with a letter or digit.
    static func checkNewBucketName(_ name: String) throws {
        let bytes = Array(name.utf8)
        func alphanumeric(_ byte: UInt8) -> Bool { (97...122).contains(byte) || (48...57).contains(byte) }
        guard (3...63).contains(bytes.count), let first = bytes.first, let last = bytes.last, alphanumeric(first), alphanumeric(last),
              bytes.allSatisfy({ alphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }), !name.contains("..")
        else { throw S3Failure("InvalidBucketName", "The specified bucket is not valid.") }
    }

    func createBucket(_ context: inout RequestContext, body: HTTPRequestBody) throws -> HTTPServerResponse {
        guard coversBucket(context.principal, context.bucket, operation: .write) else {
            throw S3Failure("AccessDenied", "Access Denied: creating a bucket needs a grant to write the whole of it.")
        }
        try Self.checkNewBucketName(context.bucket)
        try Self.refuseAccessControl(context)
        if context.request.headers.contains(where: { $0.name.lowercased() == "x-amz-bucket-object-lock-enabled" && $0.value.lowercased() == "true" }) {
            throw S3Failure.unsupportedFeature("object lock")
        }
        // The optional CreateBucketConfiguration names a region; any is accepted.
        let upload = try S3UploadBody(context, body: body, maximumSize: 64 * 1024)
        while try upload.next() != nil {}
        context.bytesIn = upload.count
        // Every bucket here is the caller's own (it needs write on all of it), and creating one's
        // own bucket again succeeds, as in us-east-1 (other regions answer
        // BucketAlreadyOwnedByYou).
        // The record is stored unless the bucket has one, or objects (a folder made another
        // way keeps its own date); with either it already existed.
        let existed = try bucketExists(context.bucket) || !(try storeBucketRecord(context.bucket))
        if existed, options.region != "us-east-1" {
            throw S3Failure("BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.")
        }
        state.withLock { $0.knownBuckets[context.bucket] = options.clock() }
        return HTTPServerResponse(status: 200, headers: [("Location", "/" + context.bucket)])
    }

    func deleteBucket(_ context: RequestContext) throws -> HTTPServerResponse {
        guard coversBucket(context.principal, context.bucket, operation: .delete) else {
            throw S3Failure("AccessDenied", "Access Denied: deleting a bucket needs a grant to delete the whole of it.")
        }
        try requireBucket(context.bucket)
        let prefix = options.root + context.bucket + "/"
        let empty = try Blocking.wait { [provider] in
            var iterator = provider.list(ListOptions(prefix: prefix, recursive: true, pageSize: 1)).makeAsyncIterator()
            return try await iterator.next() == nil
        }
        guard empty else { throw S3Failure("BucketNotEmpty", "The bucket you tried to delete is not empty.") }
        // Unfinished multipart uploads are not objects: as AWS does, the bucket goes and they
        // go with it.
        try abortUploads(inBucket: context.bucket)
        try removeBucketRecord(context.bucket)
        _ = state.withLock { $0.knownBuckets.removeValue(forKey: context.bucket) }
        return HTTPServerResponse(status: 204)
    }

    // MARK: - Listing

    /// How a listing is limited by the grants.
    enum ListingScope {
        /// The whole prefix may be listed.
        case whole
        /// Only the entries under these prefixes (relative to the root) may be shown.
        case within([String])
    }

    /// What the principal may see of a listing of `prefix` (relative to the root): all of it,
    /// the parts under its list grants, or nothing (`AccessDenied`).
    func listingScope(_ context: RequestContext, prefix: String) throws -> ListingScope {
        guard let principal = context.principal else { throw S3Failure("AccessDenied", "Access Denied") }
        let decision = principal.grants.decide(.list, key: prefix)
        if decision == .permitted { return .whole }
        if case .refused(let refusal) = decision, refusal.kind == .unsafeKey {
            // As for a key (``authorize(_:_:_:)``): under a grant on the whole bucket, a prefix
            // no key has (`/`, a newline) lists nothing, as S3 answers.
            if let slash = prefix.firstIndex(of: "/"), coversBucket(principal, String(prefix[..<slash]), operation: .list) { return .whole }
            throw S3Failure("AccessDenied", "Access Denied: \(refusal.reason).")
        }
        // Grants that list a folder inside the requested prefix: show that folder's entries.
        let inner = principal.grants.grants.filter { grant in
            grant.permissions.contains(.list) && grant.prefix.utf8HasPrefix(prefix) && principal.grants.permits(.list, key: grant.prefix)
        }.map(\.prefix)
        guard !inner.isEmpty else { throw S3Failure("AccessDenied", "Access Denied: no grant allows listing \(prefix.debugDescription).") }
        return .within(inner)
    }

    /// ListObjects, ListObjectsV2, or (`versions`) ListObjectVersions: a bucket never has
    /// versioning enabled here, so every object is its one version, `null`, the latest.
    func listObjects(_ context: RequestContext, versions: Bool = false) throws -> HTTPServerResponse {
        let version2 = !versions && context.query["list-type"] == "2"
        if !versions, let listType = context.query["list-type"], listType != "2" { throw S3Failure("InvalidArgument", "list-type must be 2.") }
        let prefix = context.query["prefix"] ?? ""
        let delimiter = context.query["delimiter"].flatMap { $0.isEmpty ? nil : $0 }
        let urlEncoded: Bool
        switch context.query["encoding-type"] {
        case nil: urlEncoded = false
        case "url": urlEncoded = true
        default: throw S3Failure("InvalidArgument", "Invalid Encoding Method specified in Request")
        }
        var maxKeys = 1000
        if let text = context.query["max-keys"] {
            guard text.utf8.count <= 9, text.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text) else {
                throw S3Failure("InvalidArgument", "max-keys must be a non-negative number.")
            }
            maxKeys = min(value, 1000)
        }
        var start: String?
        if versions {
            if let marker = context.query["version-id-marker"], !marker.isEmpty {
                guard marker == "null", context.query["key-marker"] != nil else {
                    throw S3Failure("InvalidArgument", "A version-id-marker cannot be specified without a key marker, and only null names a version here.")
                }
            }
            // After key K's only version, the next key; `version-id-marker=null` names that one.
            if let marker = context.query["key-marker"], !marker.isEmpty { start = marker }
        } else if version2 {
            if let token = context.query["continuation-token"] {
                guard let bytes = Base64URL.decode(token), Base64URL.encode(bytes) == token, let key = String(data: bytes, encoding: .utf8) else {
                    throw S3Failure("InvalidArgument", "The continuation token provided is incorrect")
                }
                start = key
            } else if let after = context.query["start-after"], !after.isEmpty {
                start = after
            }
        } else if let marker = context.query["marker"], !marker.isEmpty {
            start = marker
        }

        try requireBucketVisible(context)
        let bucketPrefix = context.bucket + "/"
        let scope = try listingScope(context, prefix: bucketPrefix + prefix)
        try requireBucket(context.bucket)

        // No key fits in a page of none, and S3 says so without truncating.
        let page = maxKeys == 0
            ? (entries: [], truncated: false)
            : try collect(bucketPrefix: bucketPrefix, prefix: prefix, delimiter: delimiter, start: start, maxKeys: maxKeys, scope: scope)
        func encode(_ text: String) -> String { (urlEncoded ? Self.urlEncode(text) : text).xmlEscaped }
        let element = versions ? "ListVersionsResult" : "ListBucketResult"
        var xml = "<\(element) xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>\(context.bucket.xmlEscaped)</Name><Prefix>\(encode(prefix))</Prefix>"
        if versions {
            xml += "<KeyMarker>\(encode(context.query["key-marker"] ?? ""))</KeyMarker><VersionIdMarker>\((context.query["version-id-marker"] ?? "").xmlEscaped)</VersionIdMarker>"
            if page.truncated, let last = page.entries.last {
                xml += "<NextKeyMarker>\(encode(last.name))</NextKeyMarker>"
                if last.file != nil { xml += "<NextVersionIdMarker>null</NextVersionIdMarker>" }
            }
        } else if version2 {
            xml += "<KeyCount>\(page.entries.count)</KeyCount>"
            if let token = context.query["continuation-token"] { xml += "<ContinuationToken>\(token.xmlEscaped)</ContinuationToken>" }
            if let after = context.query["start-after"] { xml += "<StartAfter>\(encode(after))</StartAfter>" }
            if page.truncated, let last = page.entries.last { xml += "<NextContinuationToken>\(Base64URL.encode(Data(last.name.utf8)))</NextContinuationToken>" }
        } else {
            xml += "<Marker>\(encode(context.query["marker"] ?? ""))</Marker>"
            if page.truncated, let last = page.entries.last { xml += "<NextMarker>\(encode(last.name))</NextMarker>" }
        }
        xml += "<MaxKeys>\(maxKeys)</MaxKeys>"
        if let delimiter { xml += "<Delimiter>\(encode(delimiter))</Delimiter>" }
        if urlEncoded { xml += "<EncodingType>url</EncodingType>" }
        xml += "<IsTruncated>\(page.truncated)</IsTruncated>"
        var prefixes = ""
        // ListObjects (version 1) and ListObjectVersions name each object's owner; version 2
        // only with fetch-owner=true.
        let owner = !version2 || context.query["fetch-owner"] == "true" ? Self.ownerXML(context) : ""
        for entry in page.entries {
            if let file = entry.file {
                let modified = file.serverModified ?? file.modificationDate ?? Date(timeIntervalSince1970: 0)
                let details = "<LastModified>\(Self.isoDate(modified))</LastModified><ETag>\(Self.etag(of: file).xmlEscaped)</ETag><Size>\(file.size)</Size>"
                if versions {
                    xml += "<Version><Key>\(encode(entry.name))</Key><VersionId>null</VersionId><IsLatest>true</IsLatest>\(details)\(owner)<StorageClass>STANDARD</StorageClass></Version>"
                } else {
                    xml += "<Contents><Key>\(encode(entry.name))</Key>\(details)\(owner)<StorageClass>STANDARD</StorageClass></Contents>"
                }
            } else {
                prefixes += "<CommonPrefixes><Prefix>\(encode(entry.name))</Prefix></CommonPrefixes>"
            }
        }
        return Self.xml(xml + prefixes + "</\(element)>")
    }

    /// The `<Owner>` of what a principal sees: the gateway has one owner per principal (the
    /// name its credentials carry), as ListBuckets reports it.
    static func ownerXML(_ context: RequestContext) -> String {
        let owner = (context.principal?.name ?? "").xmlEscaped
        return "<Owner><ID>\(owner)</ID><DisplayName>\(owner)</DisplayName></Owner>"
    }

    /// One entry of a listing answer: a key (with its object) or a common prefix, relative to the bucket.
    struct ListedEntry {
        var name: String
        var file: RemoteFile?
    }

    /// Up to `maxKeys` entries after `start`, and whether more follow.
    /// `/` as the delimiter is the backend's own one-level listing; any other delimiter groups a
    /// full listing here, each common prefix once.
    func collect(bucketPrefix: String, prefix: String, delimiter: String?, start: String?, maxKeys: Int, scope: ListingScope) throws -> (
        entries: [ListedEntry], truncated: Bool
    ) {
        let root = options.root
        let full = root + bucketPrefix + prefix
        do {
            try ObjectKey.validatePrefix(full)
        } catch {
            return ([], false)  // no addressable key starts with it
        }
        let startKey = start.map { root + bucketPrefix + $0 }
        let listOptions = ListOptions(
            prefix: full, recursive: delimiter != "/", startAfter: startKey.flatMap { $0.utf8Precedes(full) ? nil : $0 }, pageSize: min(1000, maxKeys + 1))
        let shown: @Sendable (String, Bool) -> Bool = { relative, isFolder in
            switch scope {
            case .whole: return true
            case .within(let granted):
                // An entry under a granted folder, or a folder on the way to one.
                return granted.contains { relative.utf8HasPrefix($0) || (isFolder && $0.utf8HasPrefix(relative)) }
            }
        }
        return try Blocking.wait { [provider] in
            var entries: [ListedEntry] = []
            var truncated = false
            var lastGroup: String?
            for try await entry in provider.list(listOptions) {
                let name: String
                let file: RemoteFile?
                switch entry {
                case .object(let object):
                    name = object.path.rawValue
                    file = object
                case .directory(let folder):
                    name = folder
                    file = nil
                case .unaddressable:
                    continue
                }
                if let startKey, !startKey.utf8Precedes(name) { continue }
                guard let relativeToRoot = name.utf8Dropping(prefix: root), let relative = relativeToRoot.utf8Dropping(prefix: bucketPrefix),
                      shown(relativeToRoot, file == nil)
                else { continue }
                var listed = ListedEntry(name: relative, file: file)
                if let delimiter, delimiter != "/", let rest = relative.utf8Dropping(prefix: prefix), let cut = rest.range(of: delimiter) {
                    // Rolled up into its common prefix, shown once; a page that ended on it does
                    // not show it again.
                    let group = prefix + rest[..<cut.upperBound]
                    if group == lastGroup || start.map({ $0.utf8HasPrefix(group) }) == true { continue }
                    lastGroup = group
                    listed = ListedEntry(name: group, file: nil)
                }
                if entries.count == maxKeys {
                    truncated = true
                    break
                }
                entries.append(listed)
            }
            return (entries, truncated)
        }
    }

    /// Percent-encodes all but the unreserved characters and `/`, as `encoding-type=url` asks.
    static func urlEncode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "/"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                output += String(format: "%%%02X", byte)
            }
        }
        return output
    }
}
