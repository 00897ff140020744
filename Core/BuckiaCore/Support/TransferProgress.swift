/// How a transfer tells whoever started it that bytes moved, for progress displays.
///
/// Set an observer around a transfer with `TransferProgress.$observer.withValue(…)`; the HTTP
/// transports and the local provider call it with each batch of bytes sent or received. A
/// transfer that is retried reports the bytes it sends again, so a display clamps to the
/// size it expects. Providers that cannot report simply never call it: a display then moves
/// when each file finishes.
public enum TransferProgress {
    /// Receives the number of bytes moved since the previous call.
    public typealias Observer = @Sendable (Int64) -> Void

    /// The observer of transfers started by the current task.
    @TaskLocal public static var observer: Observer?
}
