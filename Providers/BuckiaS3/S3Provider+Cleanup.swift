import BuckiaCore
import BuckiaSigV4
import Foundation

extension S3Provider {
    /// Lists the bucket's multipart uploads under `prefix` (`ListMultipartUploads`, paged),
    /// each with what this machine's resume states say about it.
    public func unfinishedUploads(prefix: String) async throws -> [UnfinishedUpload] {
        var known: [String: Bool?] = [:]
        for (_, state) in MultipartState.all(in: settings.stateDirectory)
        where state.bucket == settings.bucket && (state.endpoint == nil || state.endpoint == settings.endpoint.absoluteString) {
            known[state.uploadId] = state.canResume
        }
        var uploads: [UnfinishedUpload] = []
        var markers: (key: String, id: String)?
        repeat {
            var query: [(String, String)] = [("uploads", ""), ("encoding-type", "url")]
            if !prefix.isEmpty { query.append(("prefix", prefix)) }
            if let markers {
                query.append(("key-marker", markers.key))
                query.append(("upload-id-marker", markers.id))
            }
            let root = try XMLNode.parse(
                try await send(.get, key: nil, query: query, operation: "list unfinished uploads").data, what: "list unfinished uploads")
            // Keys come URL-encoded only when the server honoured encoding-type (moto does not).
            let encoded = root.value("EncodingType") == "url"
            func key(_ text: String?) throws -> String {
                guard let text else { throw S3Provider.malformed("an upload without a key") }
                guard encoded else { return text }
                guard let decoded = text.removingPercentEncoding else { throw S3Provider.malformed("an upload key that is not URL-encoded") }
                return decoded
            }
            for upload in root.children("Upload") {
                guard let id = upload.value("UploadId") else { throw S3Provider.malformed("an upload without an UploadId") }
                let status: UnfinishedUpload.Status
                switch known[id] {
                case .some(.some(true)): status = .resumable
                case .some(.some(false)): status = .abandoned
                case .some(.none), .none: status = .unknown
                }
                uploads.append(
                    UnfinishedUpload(
                        key: try key(upload.value("Key")), id: id, initiated: upload.value("Initiated").flatMap(S3Provider.parseISODate),
                        status: status))
            }
            if root.value("IsTruncated") == "true" {
                guard let nextKey = root.value("NextKeyMarker"), let nextID = root.value("NextUploadIdMarker") else {
                    throw S3Provider.malformed("a truncated upload listing without its next markers")
                }
                markers = (try key(nextKey), nextID)
            } else {
                markers = nil
            }
        } while markers != nil
        return uploads
    }

    /// Aborts the upload (`AbortMultipartUpload`) and forgets any resume state for it.
    public func abortUpload(_ upload: UnfinishedUpload) async throws {
        try await abortUpload(key: upload.key, uploadId: upload.id)
        for (url, state) in MultipartState.all(in: settings.stateDirectory) where state.uploadId == upload.id {
            try? FileManager.default.removeItem(at: url)
        }
    }

    static func malformed(_ what: String) -> BuckiaError {
        BuckiaError(.corrupt, "The server's list of unfinished uploads holds \(what).", operation: "list unfinished uploads")
    }
}
