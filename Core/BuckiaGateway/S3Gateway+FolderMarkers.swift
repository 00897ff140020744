import BuckiaCore
import BuckiaSecurity
import Foundation

/// Folder markers: a key ending in `/` (`photos/`), which S3 keeps as an empty object and tools
/// make for a folder. Over a backend with folders of its own (``Capability/folders``: a local
/// folder) the marker is that folder — made by a PUT of no bytes, there while the folder is,
/// removed by a DELETE when it holds nothing. Over any other backend Buckia's keys cannot end in
/// `/`, so a marker is refused with an error that says so.
extension S3Gateway {
    /// The entity tag of a marker: the MD5 of no bytes, as S3 gives an empty object.
    static let emptyTag = "\"d41d8cd98f00b204e9800998ecf8427e\""

    /// The content types a marker may be written with: what tools send for a folder, or for
    /// no bytes at all. Another would be a type the folder cannot keep.
    static let folderTypes: Set<String> = ["application/x-directory", "httpd/unix-directory", "application/octet-stream", "binary/octet-stream"]

    /// Whether the request names a folder marker (its key ends in `/`).
    static func isFolderMarker(_ context: RequestContext) -> Bool {
        context.key.utf8.count > 1 && context.key.utf8.last == UInt8(ascii: "/")
    }

    /// The remote key of the folder a marker names, once the marker is checked against the
    /// grants for `operation`. The grants' screen calls a key with an empty segment unsafe, so
    /// as every such key a marker needs a grant on the whole bucket (``authorize(_:_:_:)``):
    /// under a grant on part of it, it is refused.
    private func folderKey(_ context: RequestContext, for operation: StorageOperation) throws -> ObjectKey? {
        let name = String(context.key.dropLast())
        try authorize(context, operation, context.bucket + "/" + context.key)
        guard provider.capabilities.supports(.folders) else { return nil }
        do {
            return try ObjectKey(options.root + context.bucket + "/" + name)
        } catch {
            throw S3Failure("InvalidArgument", "The key cannot be stored by this gateway's backend: \(BuckiaError.wrapping(error, operation: "key").message)")
        }
    }

    private func noFolders() -> S3Failure {
        S3Failure(
            "InvalidArgument",
            "The key ends with '/', a folder marker; this gateway's backend (\(provider.providerType.rawValue)) has no folders of its own, and Buckia's keys cannot end with '/'.")
    }

    func folderMarkerRequest(_ context: inout RequestContext, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let method = context.request.method
        // Checked against the grants first, whatever is then refused.
        let operation: StorageOperation = method == "GET" || method == "HEAD" ? .read : method == "DELETE" ? .delete : .write
        let folder = try folderKey(context, for: operation)
        let unsupported = ["uploadId", "uploads", "attributes"].contains { context.query[$0] != nil } || !context.request.values("x-amz-copy-source").isEmpty
        switch method {
        case "PUT" where !unsupported:
            context.operation = "PutObject"
            guard let key = folder else { throw noFolders() }
            try requireBucket(context.bucket)
            let fields = context.request.headers.map { (name: $0.name.lowercased(), value: $0.value) }
            if let stored = fields.first(where: { $0.name.hasPrefix("x-amz-meta-") || ContentHeaders.names.contains($0.name) }) {
                throw S3Failure.unsupportedFeature("\(stored.name) on a folder marker (over this backend a marker is a folder, which keeps no metadata)")
            }
            if let type = try context.header("content-type"), !Self.folderTypes.contains(type.lowercased()) {
                throw S3Failure.unsupportedFeature("the content type \(type) on a folder marker (over this backend a marker is a folder)")
            }
            if try context.header("if-match") != nil || context.header("if-none-match") != nil {
                throw S3Failure.unsupportedFeature("a conditional write of a folder marker")
            }
            try Self.refuseAccessControl(context)
            // The body is read (its signature and checksums checked) and must be empty: the
            // first byte refuses it.
            let upload = try S3UploadBody(context, body: body, maximumSize: .max)
            while let chunk = try upload.next() {
                guard chunk.isEmpty else { throw S3Failure("InvalidArgument", "A folder marker over this backend is a folder, which holds no bytes; send it with an empty body.") }
            }
            try Blocking.wait { [provider] in try await provider.createFolder(key) }
            return HTTPServerResponse(status: 200, headers: [("ETag", Self.emptyTag)])
        case "GET" where !unsupported, "HEAD" where !unsupported:
            context.operation = method == "GET" ? "GetObject" : "HeadObject"
            guard let key = folder, let date = try Blocking.wait({ [provider] in try await provider.folderDate(key) }) else {
                throw S3Failure("NoSuchKey", "The specified key does not exist.")
            }
            if let part = context.query["partNumber"], part != "1" { throw S3Failure("InvalidPartNumber", "The requested partnumber is not satisfiable", status: 416) }
            let marker = RemoteFile(path: key, size: 0, modificationDate: date, contentType: "application/x-directory", etag: Self.emptyTag)
            if let notModified = try checkConditions(context, file: marker, etag: Self.emptyTag, prefix: "") { return notModified }
            if let range = try context.header("range") { _ = try Self.parseRange(range, size: 0) }
            var headers = objectHeaders(marker, etag: Self.emptyTag)
            headers.append(("Content-Length", "0"))
            return HTTPServerResponse(status: 200, headers: headers)
        case "DELETE" where !unsupported:
            context.operation = "DeleteObject"
            if let key = folder {
                try Blocking.wait { [provider] in try await provider.deleteFolder(key) }
            }
            return HTTPServerResponse(status: 204)
        default:
            throw noFolders()
        }
    }
}
