import Foundation

/// A moment as ISO 8601 basic-format text in UTC (`20261123T150405Z`): what SigV4 signs and
/// what names sync's conflict copies. Digits are formatted by hand: `String(format:)` goes
/// through NSString and cost more than the HMACs of a signature.
package struct UTCTimestamp: Hashable, Sendable {
    /// `yyyyMMdd'T'HHmmss'Z'`.
    package let basic: String
    /// `yyyyMMdd`.
    package let day: String

    /// The timestamp of `date`, whole seconds (fractions are dropped).
    package init(_ date: Date) {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        let day = Self.digits(Int(parts.tm_year) + 1900, 4) + Self.digits(Int(parts.tm_mon) + 1, 2) + Self.digits(Int(parts.tm_mday), 2)
        self.day = day
        basic = day + "T" + Self.digits(Int(parts.tm_hour), 2) + Self.digits(Int(parts.tm_min), 2) + Self.digits(Int(parts.tm_sec), 2) + "Z"
    }

    /// `value` in decimal, zero-padded to at least `width` digits.
    package static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
