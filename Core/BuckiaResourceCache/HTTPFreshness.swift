import Foundation

/// A response's `Cache-Control` as a private cache reads it (RFC 9111 §5.2.2).
public struct CacheControl: Sendable, Hashable {
    /// `max-age`, in seconds; an invalid value counts as 0 (stale), as §4.2.1 says.
    public var maxAge: Int?
    /// `no-store`: never kept.
    public var noStore = false
    /// `no-cache`: kept, but asked about before every use.
    public var noCache = false
    /// `must-revalidate` (or `proxy-revalidate`): never served stale, not even on error.
    public var mustRevalidate = false
    /// `stale-while-revalidate` (RFC 5861), in seconds.
    public var staleWhileRevalidate: Int?
    /// `stale-if-error` (RFC 5861), in seconds.
    public var staleIfError: Int?

    /// Reads a header value; unknown directives are ignored, names are case-insensitive,
    /// values may be quoted.
    public init(_ header: String?) {
        guard let header else { return }
        for part in header.split(separator: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard let name = pieces.first?.lowercased(), !name.isEmpty else { continue }
            let value = pieces.count > 1 ? pieces[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : nil
            func seconds() -> Int { value.flatMap { Int($0) }.map { max(0, $0) } ?? 0 }
            switch name {
            case "max-age": maxAge = seconds()
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "must-revalidate", "proxy-revalidate": mustRevalidate = true
            case "stale-while-revalidate": staleWhileRevalidate = seconds()
            case "stale-if-error": staleIfError = seconds()
            default: continue
            }
        }
    }
}

/// Freshness of a stored response (RFC 9111 §4.2), computed once when it is stored (or
/// revalidated) and kept as a moment: the entry is fresh until then.
public enum HTTPFreshness {
    /// The longest heuristic lifetime (10 % of the time since Last-Modified, §4.2.2).
    public static let heuristicLimit: TimeInterval = 24 * 3600

    /// Until when a response received at `responseTime` (requested at `requestTime`) is
    /// fresh, or nil when every use must ask the origin (`no-cache`, or no lifetime at all).
    public static func freshUntil(
        cacheControl: CacheControl, date: String?, expires: String?, lastModified: String?, age: String?, requestTime: Date, responseTime: Date
    ) -> Date? {
        if cacheControl.noCache { return nil }
        let dateValue = date.flatMap(HTTPDate.parse) ?? responseTime
        let lifetime: TimeInterval
        if let maxAge = cacheControl.maxAge {
            lifetime = TimeInterval(maxAge)
        } else if let expires {
            // An invalid Expires (0, garbage) means already expired.
            guard let moment = HTTPDate.parse(expires) else { return nil }
            lifetime = moment.timeIntervalSince(dateValue)
        } else if let modified = lastModified.flatMap(HTTPDate.parse) {
            lifetime = min(heuristicLimit, max(0, dateValue.timeIntervalSince(modified)) / 10)
        } else {
            return nil
        }
        // §4.2.3: the age it already had when it arrived.
        let apparentAge = max(0, responseTime.timeIntervalSince(dateValue))
        let ageValue = age.flatMap { TimeInterval($0.trimmingCharacters(in: .whitespaces)) }.map { max(0, $0) } ?? 0
        let correctedAge = ageValue + max(0, responseTime.timeIntervalSince(requestTime))
        let initialAge = max(apparentAge, correctedAge)
        guard lifetime > initialAge else { return nil }
        return responseTime.addingTimeInterval(lifetime - initialAge)
    }
}

/// HTTP dates (RFC 9110 §5.6.7): the IMF-fixdate form every server sends.
public enum HTTPDate {
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, or nil for anything else.
    public static func parse(_ text: String) -> Date? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT", let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])),
            let year = Int(parts[3])
        else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (1...31).contains(day), (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2]),
            (1...9999).contains(year)
        else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month + 1, day)
        (components.hour, components.minute, components.second) = (clock[0], clock[1], clock[2])
        var calendar = Calendar(identifier: .gregorian)
        guard let utc = TimeZone(identifier: "UTC") else { return nil }
        calendar.timeZone = utc
        return calendar.date(from: components)
    }

    /// `date` as an IMF-fixdate.
    public static func format(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let weekday = weekdays[((c.weekday ?? 1) - 1 + 7) % 7]
        let month = months[((c.month ?? 1) - 1 + 12) % 12]
        func pad(_ value: Int?, _ width: Int) -> String {
            let text = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(weekday), \(pad(c.day, 2)) \(month) \(pad(c.year, 4)) \(pad(c.hour, 2)):\(pad(c.minute, 2)):\(pad(c.second, 2)) GMT"
    }
}
