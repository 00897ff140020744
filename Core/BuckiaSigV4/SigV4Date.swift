import Foundation

/// The two date forms SigV4 uses, in UTC.
struct SigV4Date {
    /// `yyyyMMdd'T'HHmmss'Z'`.
    let timestamp: String
    /// `yyyyMMdd`.
    let day: String

    init(_ date: Date) {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        // Digits by hand: String(format:) went through NSString and cost more than the
        // HMACs of a signature.
        let day = Self.digits(Int(parts.tm_year) + 1900, 4) + Self.digits(Int(parts.tm_mon) + 1, 2) + Self.digits(Int(parts.tm_mday), 2)
        self.day = day
        timestamp = day + "T" + Self.digits(Int(parts.tm_hour), 2) + Self.digits(Int(parts.tm_min), 2) + Self.digits(Int(parts.tm_sec), 2) + "Z"
    }

    /// `value` in decimal, zero-padded to at least `width` digits.
    static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
