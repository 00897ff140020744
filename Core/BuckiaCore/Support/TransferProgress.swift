/// How a transfer tells whoever started it that bytes moved, for progress displays.
///
/// Bind an observer around a transfer with `TransferProgress.$observer.withValue(…)`; the HTTP
/// transports and the local provider call it with each batch of bytes sent or received. A
/// transfer that is retried reports the bytes it sends again, so a display clamps to the
/// size it expects. Providers that cannot report simply never call it: a display then moves
/// when each file finishes.
public enum TransferProgress {
    /// The observer of transfers started by the current task.
    ///
    /// A class rather than a closure: on Swift 6.3.1 (Linux, release builds) binding a task
    /// local of optional closure type with `withValue` crashes in `swift_task_localValuePush`.
    @TaskLocal public static var observer: TransferObserver?
}

/// Receives the bytes a transfer moves.
public final class TransferObserver: Sendable {
    private let moved: @Sendable (Int64) -> Void

    /// An observer that calls `moved` with the number of bytes moved since its previous call.
    public init(_ moved: @escaping @Sendable (Int64) -> Void) { self.moved = moved }

    /// Reports `bytes` more bytes moved.
    public func report(_ bytes: Int64) { moved(bytes) }
}
