import BuckiaCore
import Foundation

/// The two date forms SigV4 uses, in UTC.
struct SigV4Date {
    /// `yyyyMMdd'T'HHmmss'Z'`.
    let timestamp: String
    /// `yyyyMMdd`.
    let day: String

    init(_ date: Date) {
        let stamp = UTCTimestamp(date)
        timestamp = stamp.basic
        day = stamp.day
    }
}
