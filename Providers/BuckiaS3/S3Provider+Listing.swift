import BuckiaCore
import BuckiaHTTP
import Foundation

extension S3Provider {
    /// One ListObjectsV2 page. Keys come URL-encoded (`encoding-type=url`) so any byte
    /// survives the XML. Common prefixes that do not sort after the resume point are dropped,
    /// so "only entries after start-after" holds for folders too.
    public func listPage(_ request: ListRequest) async throws -> ListPage {
        let options = request.options
        try ObjectKey.validatePrefix(options.prefix)
        var query: [(String, String)] = [("list-type", "2"), ("encoding-type", "url")]
        query.append(("max-keys", String(max(1, min(options.pageSize ?? 1000, 1000)))))
        if !options.prefix.isEmpty { query.append(("prefix", options.prefix)) }
        if !options.recursive { query.append(("delimiter", "/")) }
        if let startAfter = options.startAfter { query.append(("start-after", startAfter)) }
        if let token = request.continuation { query.append(("continuation-token", token)) }
        let response = try await send(.get, key: nil, query: query, operation: "list")
        let root = try XMLNode.parse(response.data, what: "list")
        guard root.name == "ListBucketResult" else {
            throw BuckiaError(.corrupt, "The list response is a \(root.name), not a ListBucketResult.", operation: "list")
        }
        let encoded = root.value("EncodingType") == "url"
        func decode(_ text: String) -> String { encoded ? (text.removingPercentEncoding ?? text) : text }

        var entries: [ListEntry] = []
        for item in root.children("Contents") {
            guard let key = item.value("Key") else { continue }
            let etag = item.value("ETag")
            var checksums: [ChecksumAlgorithm: String] = [:]
            if let tag = etag?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")), tag.count == 32, Hex.decode(tag) != nil {
                checksums[.md5] = tag.lowercased()
            }
            entries.append(.object(RemoteFile(
                path: decode(key), size: Int64(item.value("Size") ?? "") ?? 0,
                modificationDate: item.value("LastModified").flatMap(S3Provider.parseISODate), checksums: checksums, etag: etag)))
        }
        // S3 continuation tokens are opaque and never repeat a prefix; start-after is a key.
        for prefix in root.children("CommonPrefixes").compactMap({ $0.value("Prefix") }).map(decode) {
            if let startAfter = options.startAfter, !startAfter.utf8Precedes(prefix) { continue }
            entries.append(.directory(prefix))
        }
        entries.sort { $0.path.utf8Precedes($1.path) }
        let truncated = root.value("IsTruncated") == "true"
        return ListPage(entries: entries, continuation: truncated ? root.value("NextContinuationToken") : nil)
    }

    static func parseISODate(_ text: String) -> Date? {
        (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
            ?? (try? Date(text, strategy: Date.ISO8601FormatStyle()))
    }
}
