import BuckiaCore
import Foundation

/// What applies inbound change files to the app's database: the seam between the seed's folder
/// sync ("download only IDs bigger than the last applied ID") and the database layer
/// (`BuckiaDatabase.DatabaseManager` conforms).
public protocol InboundChangeApplier: Sendable {
    /// Which change files are already settled (applied, or refused for good), so sync lists only
    /// from where a new one can be and downloads only what is not settled.
    func inboundHistory() async throws -> InboundHistory
    /// Applies the change files now in the user's local `inbound/` folder, oldest first.
    /// `files` are the ones sync just downloaded.
    func apply(_ files: [URL]) async throws
}

/// The change files an ``InboundChangeApplier`` has settled, as sync needs them.
///
/// KSUIDs order only to the second, and a file can reach the bucket after a later one was
/// applied (a slow sender, a retried upload). So the newest applied KSUID is not a cursor:
/// sync lists from ``listFrom`` (the newest minus ``lateArrivalWindow``) and skips what
/// ``settled`` holds.
public struct InboundHistory: Sendable, Equatable {
    /// The newest settled change, or nil when none is.
    public var newest: KSUID?
    /// How long before ``newest`` a late file may still be named.
    public var lateArrivalWindow: Duration
    /// Every settled change named at or after ``listFrom``.
    public var settled: Set<KSUID>

    /// Describes the settled changes.
    public init(newest: KSUID?, lateArrivalWindow: Duration, settled: Set<KSUID>) {
        self.newest = newest
        self.lateArrivalWindow = lateArrivalWindow
        self.settled = settled
    }

    /// The earliest second a change not yet settled can be named with: the newest settled
    /// change's second less the window (nil: list everything).
    public var listFrom: Date? {
        guard let newest else { return nil }
        let window = TimeInterval(lateArrivalWindow.components.seconds)
        return Date(timeIntervalSince1970: max(KSUID.epoch, newest.date.timeIntervalSince1970 - window))
    }

    /// Whether a change named `id` still has to be downloaded.
    public func isWanted(_ id: KSUID) -> Bool {
        if settled.contains(id) { return false }
        if let listFrom, id.date < listFrom { return false }
        return true
    }

    /// The largest KSUID named before ``listFrom``: a listing that starts after its text
    /// holds every name from ``listFrom`` on.
    public var startAfter: KSUID? {
        guard let listFrom, listFrom.timeIntervalSince1970 > KSUID.epoch else { return nil }
        let seconds = UInt32(clamping: Int64(listFrom.timeIntervalSince1970 - KSUID.epoch) - 1)
        return KSUID(timestamp: seconds, payload: [UInt8](repeating: 0xFF, count: 16))
    }
}
