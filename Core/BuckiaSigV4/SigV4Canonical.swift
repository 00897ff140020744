import BuckiaCore
import Foundation

/// The encoding and normalisation rules of the canonical request.
public enum SigV4Canonical {
    /// RFC 3986 unreserved characters: the only ones never percent-encoded.
    static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~".utf8)

    /// Percent-encodes every byte but the unreserved ones (and `/` when `keepSlash`).
    public static func encode(_ text: String, keepSlash: Bool = false) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if unreserved.contains(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                output.append(byte)
            } else {
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes `%XX` escapes; a malformed escape is kept as written. `+` stays `+`.
    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"),
               let first = utf8.index(index, offsetBy: 1, limitedBy: utf8.endIndex), first < utf8.endIndex,
               let second = utf8.index(first, offsetBy: 1, limitedBy: utf8.endIndex), second < utf8.endIndex,
               let value = UInt8(String(decoding: [utf8[first], utf8[second]], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                index = utf8.index(after: second)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The canonical URI of `url`'s path, from the path as it goes on the wire.
    ///
    /// S3 decodes what it receives and encodes the key once. Every other service encodes the
    /// path it receives once more, as sent: `%20` becomes `%2520`, and a `$` a client sends
    /// unescaped becomes `%24` (never `%2524`), so the wire form is encoded without decoding.
    static func path(of url: URL, encoding: SigV4Signer.PathEncoding) -> String {
        path(percentEncoded: URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? "", encoding: encoding)
    }

    /// The canonical URI of a path as it goes on the wire.
    static func path(percentEncoded raw: String, encoding: SigV4Signer.PathEncoding) -> String {
        let path = raw.isEmpty ? "/" : raw
        switch encoding {
        case .s3:
            return path.split(separator: "/", omittingEmptySubsequences: false).map { encode(decode($0)) }.joined(separator: "/")
        case .standard:
            var segments: [String] = []
            for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
                switch segment {
                case ".": continue
                case "..": _ = segments.popLast()
                default: segments.append(encode(String(segment)))
                }
            }
            let trailing = path.hasSuffix("/") && !segments.isEmpty ? "/" : ""
            return "/" + segments.joined(separator: "/") + trailing
        }
    }

    /// The query's name/value pairs, decoded, in their order.
    static func queryItems(of url: URL) -> [(String, String)] {
        queryItems(percentEncoded: URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery ?? "")
    }

    /// The pairs of a query as it goes on the wire, decoded, in their order.
    static func queryItems(percentEncoded query: String) -> [(String, String)] {
        query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let equals = pair.firstIndex(of: "=") {
                return (decode(pair[..<equals]), decode(pair[pair.index(after: equals)...]))
            }
            return (decode(pair), "")
        }
    }

    /// The canonical query string: pairs encoded, sorted by name then value.
    static func query(of url: URL) -> String {
        query(percentEncoded: URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery ?? "")
    }

    /// The canonical query string of a query as it goes on the wire.
    static func query(percentEncoded query: String) -> String {
        let encoded: [(name: String, value: String)] = queryItems(percentEncoded: query).map { (encode($0.0), encode($0.1)) }
        let sorted = encoded.sorted { (lhs, rhs) -> Bool in
            lhs.name == rhs.name ? lhs.value < rhs.value : lhs.name < rhs.name
        }
        return sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// A request target's path and query as a URL made from it would give them, read without
    /// making the URL (a quarter of a small request's verification went to that); nil when the
    /// target holds a byte a URL does not carry as it is (a space, `#`, a non-ASCII byte, a `%`
    /// that starts no escape), for the caller to go through `URL` and get exactly its reading.
    static func pathAndQuery(ofTarget target: String) -> (path: String, query: String)? {
        let bytes = target.utf8
        guard bytes.first == UInt8(ascii: "/") else { return nil }
        var question: String.Index?
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                let first = bytes.index(after: index)
                guard first < bytes.endIndex, isHexDigit(bytes[first]) else { return nil }
                let second = bytes.index(after: first)
                guard second < bytes.endIndex, isHexDigit(bytes[second]) else { return nil }
                index = bytes.index(after: second)
                continue
            }
            guard carriedAsIs.contains(byte) else { return nil }
            if byte == UInt8(ascii: "?"), question == nil { question = index }
            index = bytes.index(after: index)
        }
        guard let question else { return (target, "") }
        return (String(target[..<question]), String(target[target.index(after: question)...]))
    }

    /// The bytes RFC 3986 allows as they are in a path or a query: unreserved, sub-delims, `:`, `@`, `/`, `?`.
    private static let carriedAsIs = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~!$&'()*+,;=:@/?".utf8)

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    /// `url` with its query replaced by `items`, encoded canonically.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidPath`` when no such URL can be made:
    ///   never `url` unchanged, which would be a URL without its signature.
    static func replacingQuery(of url: URL, with items: [(String, String)]) throws -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw BuckiaError(.invalidPath, "The URL \(url.absoluteString.debugDescription) cannot be taken apart to sign.", operation: "presign")
        }
        components.percentEncodedQuery = items.isEmpty ? nil : items.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
        guard let replaced = components.url else {
            throw BuckiaError(.invalidPath, "No URL can carry the signed query of \(url.absoluteString.debugDescription).", operation: "presign")
        }
        return replaced
    }

    /// A header value with leading and trailing space removed and inner runs of space collapsed.
    static func trimmed(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    /// The canonical headers: names lowercased and sorted, each value trimmed.
    ///
    /// Keys that differ only in case are one header: their trimmed values are joined with `,`
    /// in the order of the keys as written (byte order), since a dictionary keeps no order.
    static func headers(_ headers: [String: String]) -> [(name: String, value: String)] {
        var grouped: [String: [String]] = [:]
        for key in headers.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            grouped[key.lowercased(), default: []].append(trimmed(headers[key] ?? ""))
        }
        return grouped.keys.sorted().map { (name: $0, value: grouped[$0, default: []].joined(separator: ",")) }
    }
}
