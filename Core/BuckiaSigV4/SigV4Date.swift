import BuckiaCore
import Foundation

/// The two date forms SigV4 uses, in UTC.
package struct SigV4Date {
    /// `yyyyMMdd'T'HHmmss'Z'`.
    package let timestamp: String
    /// `yyyyMMdd`.
    package let day: String

    package init(_ date: Date) {
        let stamp = UTCTimestamp(date)
        timestamp = stamp.basic
        day = stamp.day
    }
}
