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
        // IMF-fixdate, the form every current server sends (S3's Last-Modified on every HEAD
        // and GET), is parsed by hand: a DateFormatter per call was a fifth of the CPU of
        // downloading many small objects.
        if let fixed = imfFixdate(text) { return fixed }
        // The obsolete forms: a DateFormatter is built per call (it is not Sendable, so it
        // cannot be a shared static), which is fine for headers this rare.
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

extension RetryAfter {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].map { Array($0.utf8) }
    private static let weekdays = Set(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) })

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`): `.some(date)` when `text` has that
    /// shape, `.some(nil)` when it has the shape but impossible values (30 Feb, 25:00), and
    /// nil when it has another shape (so the other forms are tried).
    static func imfFixdate(_ text: String) -> Date?? {
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 32, b[7] == 32, b[11] == 32, b[16] == 32, b[19] == 58, b[22] == 58,
            b[25] == 32, Array(b[26...]) == Array("GMT".utf8), weekdays.contains(Array(b[0..<3]))
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in b[range] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let day = number(5..<7), let month = months.firstIndex(of: Array(b[8..<11])).map({ $0 + 1 }), let year = number(12..<16),
            let hour = number(17..<19), let minute = number(20..<22), let second = number(23..<25)
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day >= 1, day <= lengths[month - 1], hour < 24, minute < 60, second <= 60 else { return .some(nil) }
        // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59)
        return .some(Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
