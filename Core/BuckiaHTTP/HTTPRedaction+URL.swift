import Foundation

extension HTTPRedaction {
    /// The URL as text, safe to print: no userinfo, sensitive query values and fragment redacted.
    public func redact(_ url: URL) -> String { redact(urlString: url.absoluteString) }

    /// ``redact(_:)`` for a URL held as text (a `Location` header, a failing-URL string).
    public func redact(urlString: String) -> String {
        var rest = Substring(urlString)
        var fragment: Substring?
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var result = String(rest)
        if let schemeEnd = rest.range(of: "://") {
            let authorityEnd = rest[schemeEnd.upperBound...].firstIndex(of: "/") ?? rest.endIndex
            let authority = rest[schemeEnd.upperBound..<authorityEnd]
            if let at = authority.lastIndex(of: "@") {
                result = String(rest[..<schemeEnd.upperBound] + authority[authority.index(after: at)...] + rest[authorityEnd...])
            }
        }
        if let query {
            let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
                let name = pair[..<equals]
                let decoded = String(name).removingPercentEncoding ?? String(name)
                return isSensitiveQueryParameter(decoded) ? "\(name)=\(Self.placeholder)" : String(pair)
            }
            result += "?" + pairs.joined(separator: "&")
        }
        if let fragment, !fragment.isEmpty { result += "#" + Self.placeholder }
        return result
    }

    /// The values of the sensitive query parameters in `url`, both as sent and percent-decoded.
    public func sensitiveQueryValues(of url: URL) -> [String] {
        guard let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery else { return [] }
        return query.split(separator: "&").flatMap { (pair: Substring) -> [String] in
            guard let equals = pair.firstIndex(of: "=") else { return [] }
            let name = String(pair[..<equals]).removingPercentEncoding ?? String(pair[..<equals])
            guard isSensitiveQueryParameter(name) else { return [] }
            let value = String(pair[pair.index(after: equals)...])
            return [value, value.removingPercentEncoding ?? value]
        }
        .filter { !$0.isEmpty }
    }
}
