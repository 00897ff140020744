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
        let day = String(format: "%04d%02d%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday))
        self.day = day
        timestamp = day + String(format: "T%02d%02d%02dZ", Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
