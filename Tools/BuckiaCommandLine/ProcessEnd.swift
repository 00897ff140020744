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

    /// Ends an interrupted process: nothing more from the command reaches the user's
    /// streams, the temporaries in progress are removed, one line says so, and the process
    /// exits with 128 + `signal` at once (`_exit`: no exit handlers run beside live threads).
    /// Does nothing when the command is already exiting on its own.
    static func interrupt(_ signal: Int32) {
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
                if sigwait(&waited, &number) == 0 { interrupt(number) }
            }
        }
        watcher.name = "buckia-signals"
        watcher.start()
    }

    private static func waitForever() -> Never {
        while true { pause() }
    }
}
