import BuckiaCore
import BuckiaProviderKit
import BuckiaSigV4
import BuckiaHTTP
import Foundation

extension S3Provider {
    /// A ListObjectsV2 listing: S3's continuation token carries it from page to page, and is
    /// the resume token. Keys come URL-encoded (`encoding-type=url`) so any byte survives
    /// the XML; keys that are not valid ``BuckiaCore/ObjectKey``s (a console's `folder/`
    /// marker, `a//b`) are listed as unaddressable. Common prefixes that do not sort after
    /// `startAfter` are dropped, so "only entries after start-after" holds for folders too.
    public func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        let options = request.options
        let provider = self
        return try TokenPagedLister(request: request) { token in
            try await provider.listObjects(options, token: token)
        }
    }

    /// One ListObjectsV2 page.
    func listObjects(_ options: ListOptions, token: String?) async throws -> (entries: [ListEntry], next: String?) {
        var query: [(String, String)] = [("list-type", "2"), ("encoding-type", "url")]
        query.append(("max-keys", String(options.effectivePageSize(maximum: 1000))))
        if !options.prefix.isEmpty { query.append(("prefix", options.prefix)) }
        if !options.recursive { query.append(("delimiter", "/")) }
        if let startAfter = options.startAfter { query.append(("start-after", startAfter)) }
        if let token { query.append(("continuation-token", token)) }
        let response = try await send(.get, key: nil, query: query, operation: "list")
        let root = try XMLNode.parse(response.data, what: "list")
        guard root.name == "ListBucketResult" else {
            throw BuckiaError(.corrupt, "The list response is a \(root.name), not a ListBucketResult.", operation: "list")
        }
        let encoded = root.value("EncodingType") == "url"
        func decode(_ text: String) throws -> String {
            guard encoded else { return text }
            guard let decoded = text.removingPercentEncoding else {
                throw BuckiaError(.corrupt, "S3 listed a key whose URL encoding is broken: \(text.debugDescription).", operation: "list")
            }
            return decoded
        }

        var entries: [ListEntry] = []
        for item in root.children("Contents") {
            guard let raw = item.value("Key") else { continue }
            guard let size = Int64(item.value("Size") ?? "") else {
                throw BuckiaError(.corrupt, "S3 listed \(raw.debugDescription) without a valid size.", operation: "list")
            }
            let etag = item.value("ETag").map(S3Provider.quotedETag)
            let serverModified = item.value("LastModified").flatMap(S3Provider.parseISODate)
            let md5 = etagMD5(etag)
            entries.append(UnaddressableKey.entry(for: try decode(raw)) { key in
                RemoteFile(path: key, size: size, serverModified: serverModified, checksums: md5.map { [.md5: $0] } ?? [:], etag: etag)
            })
        }
        for prefix in try root.children("CommonPrefixes").compactMap({ $0.value("Prefix") }).map(decode) {
            if let startAfter = options.startAfter, !startAfter.utf8Precedes(prefix) { continue }
            if ObjectKey.isValidPrefix(prefix) {
                entries.append(.directory(prefix))
            } else {
                entries.append(.unaddressable(UnaddressableKey(prefix, reason: "the folder's name is not a valid key prefix")))
            }
        }
        let truncated = root.value("IsTruncated") == "true"
        let next = truncated ? root.value("NextContinuationToken") : nil
        if truncated && next == nil {
            throw BuckiaError(.corrupt, "S3 said the listing continues but gave no continuation token.", operation: "list", path: options.prefix)
        }
        return (entries.sortedByKeyBytes(), next)
    }

    /// An ETag in its quoted HTTP form, as HEAD returns it: some servers list it bare.
    static func quotedETag(_ etag: String) -> String {
        etag.hasPrefix("\"") || etag.hasPrefix("W/") ? etag : "\"\(etag)\""
    }

    static func parseISODate(_ text: String) -> Date? {
        (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
            ?? (try? Date(text, strategy: Date.ISO8601FormatStyle()))
    }
}
