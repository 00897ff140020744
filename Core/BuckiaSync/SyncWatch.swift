import BuckiaCore
import Foundation

/// How a watch keeps a pair in sync.
public struct SyncWatchOptions: Sendable {
    /// How long the local folder must be quiet after a change before a pass starts: a burst
    /// of writes is one pass.
    public var debounce: Duration
    /// The longest time between passes: how soon a change on the remote side (which sends no
    /// events) is carried across.
    public var pollInterval: Duration

    /// A watch's timing; one second of quiet and a pass at least every minute by default.
    public init(debounce: Duration = .seconds(1), pollInterval: Duration = .seconds(60)) {
        self.debounce = debounce
        self.pollInterval = pollInterval
    }
}

/// Keeps a local folder and its other side in sync as files change: a pass at once, then one
/// after each burst of local changes (once the folder has been quiet for
/// ``SyncWatchOptions/debounce``) and at least every ``SyncWatchOptions/pollInterval``.
///
/// Local changes are seen through inotify on Linux; elsewhere the watch polls. Every pass
/// lists both sides whole against the state store, so an event lost (the kernel's queue
/// overflowed, the watch was not running) costs a pass, never a change. A file a program is
/// still writing (modified, not yet closed) is held back from the pass
/// (``SyncOptions/heldBack``: neither copied nor deleted) and carried across once closed.
public enum SyncWatch {
    /// Watches `folder` (nil: no local side, so passes come at the polling interval alone)
    /// until the task is cancelled, running `pass` with the paths a program is still writing,
    /// to hold back. A pass that throws ends the watch with its error: a caller that wants to
    /// ride out a failing remote catches in `pass` and reports it.
    public static func run(
        folder: URL?, options: SyncWatchOptions, pass: @escaping @Sendable (_ heldBack: Set<ObjectKey>) async throws -> Void
    ) async throws {
        // Watching starts before the first pass, so nothing changed during it is missed.
        let watcher = try folder.map { try FolderWatcher(root: $0) }
        defer { watcher?.close() }
        let clock = ContinuousClock()
        while true {
            try Task.checkCancellation()
            watcher?.dropVanished()
            let writing = watcher?.take().writing ?? []
            var held = Set<ObjectKey>()
            for name in writing {
                do {
                    held.insert(try ObjectKey(name))
                } catch {
                    continue  // a name no key can spell is never synced: nothing to hold back
                }
            }
            try await pass(held)
            try await waitForChanges(watcher, options: options, clock: clock)
        }
    }

    /// Returns once a change has been followed by `debounce` of quiet, or `pollInterval`
    /// after it was called, whichever comes first.
    static func waitForChanges(_ watcher: FolderWatcher?, options: SyncWatchOptions, clock: ContinuousClock) async throws {
        let deadline = clock.now.advanced(by: options.pollInterval)
        let step = max(min(options.debounce / 4, .milliseconds(100)), .milliseconds(10))
        while clock.now < deadline {
            if let seen = watcher?.peek(), seen.changed, let last = seen.last, clock.now - last >= options.debounce { return }
            try await clock.sleep(for: min(step, deadline - clock.now))
        }
    }
}
