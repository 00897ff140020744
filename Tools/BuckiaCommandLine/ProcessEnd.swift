import Buckia
import Foundation

/// The one way the process ends: an interrupt and the command's own end must never both exit.
///
/// Removing an interrupted copy's temporaries makes the copy fail at once (a relay's folder is
/// gone), so the command's thread may reach its `exit` while the signal handler is on its way
/// to its own. Two threads in `exit(3)` at once is undefined behaviour, and under load the
/// command's status (3, "Nothing exists at …/.buckia-….tmp") won over 143. Whichever claims the
/// end first exits; the other waits for the process to go.
enum ProcessEnd {
    private static let claimed = Locked(false)

    /// Claims the end of the process; false when another thread already has.
    static func claim() -> Bool {
        claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }

    /// Exits with `status`, unless an interrupt is already ending the process: then this
    /// thread waits for that.
    static func exit(_ status: Int32) -> Never {
        guard claim() else { waitForever() }
        Foundation.exit(status)
    }

    /// A command that can stop cleanly on an interrupt: what to call, and what it is stopping
    /// (for the line that says so); and the signal that asked, once one has.
    private static let graceful = Locked<(stop: (@Sendable () -> Void)?, what: String, grace: UInt32, signal: Int32?)>((nil, "", gracePeriod, nil))

    /// How long a command that stops cleanly has, by default, before the process ends anyway.
    static let gracePeriod: UInt32 = 15

    /// Runs `body`, during which the first interrupt calls `stop` (cancelling the work, so it
    /// can undo what it started on a server, such as a multipart upload that cannot be
    /// resumed) instead of ending the process: the command then ends as it does on a failure,
    /// and should return ``ExitCode/stopped(by:)`` when ``interruption`` is set. A second
    /// interrupt, or `grace` seconds, ends the process as ``interrupt(_:)`` does.
    static func stoppingCleanly<T>(
        _ what: String, grace: UInt32 = gracePeriod, stop: @escaping @Sendable () -> Void, _ body: () async throws -> T
    ) async rethrows -> T {
        graceful.withLock { $0 = (stop, what, grace, $0.signal) }
        defer { graceful.withLock { $0.stop = nil } }
        return try await body()
    }

    /// The signal that asked a command to stop cleanly, if one has.
    static var interruption: Int32? { graceful.withLock { $0.signal } }

    /// Whether SIGINT or SIGTERM has reached the process: taken by the watcher, or pending
    /// for it. Standard input's end asks this first: a pipe's producer killed by the same
    /// Ctrl-C ends the input at the moment the signal arrives, and that end is no whole input.
    static var signalArrived: Bool {
        if arrived.withLock({ $0 }) { return true }
        var pending = sigset_t()
        sigemptyset(&pending)
        guard sigpending(&pending) == 0 else { return false }
        return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1
    }

    private static let arrived = Locked(false)

    /// Ends an interrupted process: nothing more from the command reaches the user's
    /// streams, the temporaries in progress are removed, one line says so, and the process
    /// exits with 128 + `signal` at once (`_exit`: no exit handlers run beside live threads).
    /// Does nothing when the command is already exiting on its own. Within
    /// ``stoppingCleanly(_:grace:stop:_:)``, the first interrupt asks the command to stop instead.
    static func interrupt(_ signal: Int32) {
        let stop = graceful.withLock { state -> (stop: @Sendable () -> Void, what: String, grace: UInt32)? in
            guard state.signal == nil, let stop = state.stop else { return nil }
            state.signal = signal
            return (stop, state.what, state.grace)
        }
        if let stop {
            Console.lastWord("buckia: interrupted; stopping \(stop.what) (interrupt again to exit at once).")
            stop.stop()
            let deadline = Thread {
                sleep(stop.grace)
                end(signal)
            }
            deadline.name = "buckia-grace"
            deadline.start()
            return
        }
        end(signal)
    }

    private static func end(_ signal: Int32) {
        guard claim() else { return }
        Console.silence()
        Temporaries.removeAllBeforeExit()
        Console.lastWord("buckia: interrupted; temporary files removed.")
        _exit(128 + signal)
    }

    /// Starts the thread that takes `signals` (SIGINT, SIGTERM) with `sigwait` and ends the
    /// process through ``interrupt(_:)``. Every thread must block them (main.swift blocks them
    /// before any other thread exists), or one that does not could take them instead.
    static func watch(_ signals: sigset_t) {
        let watcher = Thread {
            var waited = signals
            var number: Int32 = 0
            while true {
                if sigwait(&waited, &number) == 0 {
                    arrived.withLock { $0 = true }
                    interrupt(number)
                }
            }
        }
        watcher.name = "buckia-signals"
        watcher.start()
    }

    private static func waitForever() -> Never {
        while true { pause() }
    }
}
