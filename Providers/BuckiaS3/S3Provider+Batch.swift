import BuckiaCore
import BuckiaHTTP
import BuckiaSigV4
import Foundation

extension S3Provider {
    /// DeleteObjects: up to 1,000 keys per request, quiet mode, so only failures come back. A
    /// server without it (``S3Profile/deleteObjects``, Google Cloud Storage) gets one DELETE per
    /// key.
    public func deleteFiles(_ keys: [ObjectKey]) async throws {
        guard settings.profile.deleteObjects else {
            for key in keys { try await deleteFile(remotePath: key) }
            return
        }
        var start = 0
        while start < keys.count {
            let batch = keys[start..<min(start + 1000, keys.count)]
            start += batch.count
            let body = "<Delete><Quiet>true</Quiet>"
                + batch.map { "<Object><Key>\($0.rawValue.xmlEscaped)</Key></Object>" }.joined() + "</Delete>"
            let data = Data(body.utf8)
            let response = try await send(
                .post, key: nil, query: [("delete", "")],
                headers: ["content-type": "application/xml", "content-md5": try Hashing.digest(data, .md5).base64],
                body: .data(data), payloadHash: Hashing.sha256(data).hex, operation: "delete")
            let root = try XMLNode.parse(response.data, what: "delete")
            if let failure = root.children("Error").first {
                let code = failure.value("Code") ?? "Unknown"
                throw BuckiaError(
                    code == "AccessDenied" ? .permissionDenied : .io,
                    "S3 did not delete \(root.children("Error").count) of \(batch.count) objects; the first failed with \(code): \(failure.value("Message") ?? "").",
                    operation: "delete", path: failure.value("Key"))
            }
        }
    }

    /// CopyObject: the copy keeps the source's metadata (MD5, modification time). Objects
    /// over 5 GiB need a multipart copy, which this does not do.
    @discardableResult
    public func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        try await send(
            .put, key: destination, headers: ["x-amz-copy-source": copySource(source)], operation: "copy",
            check: { try S3Provider.errorInBody($0, operation: "copy") })
        guard let file = try await stat(remotePath: destination) else {
            throw BuckiaError(.corrupt, "S3 reported the copy done, but the copy is not there.", operation: "copy", path: destination.rawValue)
        }
        return file
    }
}
