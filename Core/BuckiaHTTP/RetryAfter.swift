import Foundation

/// Parses the `Retry-After` header (RFC 9110 §10.2.3): how long a server wants a client to
/// wait before its next request.
///
/// Both forms are accepted: delta-seconds (`120`) and an HTTP-date in any of the three formats
/// HTTP allows — IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`). A date in the
/// past means "now" (zero); anything unparseable is ignored (nil), so a malformed header
/// falls back to the client's own backoff instead of failing the request.
public enum RetryAfter {
    /// The longest wait this parser reports, so absurd values cannot overflow `Duration`.
    public static let ceiling: Duration = .seconds(365 * 24 * 3600)

    /// The wait a `Retry-After` value asks for.
    ///
    /// - Parameters:
    ///   - value: The header value.
    ///   - now: The current time, for the HTTP-date form.
    /// - Returns: The wait, or nil when the value is not valid.
    public static func parse(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return nil }
        if text.allSatisfy(\.isASCIIDigit) {
            guard let seconds = Int64(text) else { return ceiling }
            return min(.seconds(seconds), ceiling)
        }
        guard let date = httpDate(text) else { return nil }
        let interval = date.timeIntervalSince(now)
        guard interval > 0 else { return .zero }
        return min(.milliseconds(Int64((interval * 1000).rounded(.up))), ceiling)
    }

    /// Parses an HTTP-date in any of its three allowed formats.
    public static func httpDate(_ text: String) -> Date? {
        // A DateFormatter is built per call: it is not Sendable, so it cannot be a shared
        // static, and Retry-After headers are far too rare for the cost to matter.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        let collapsed = text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: collapsed) { return date }
        }
        return nil
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
