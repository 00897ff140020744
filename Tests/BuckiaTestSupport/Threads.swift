import Foundation

/// What the kernel says of this process's threads (`/proc/self/task`), for tests that check a
/// shutdown ended the threads it should.
public enum Threads {
    /// The name the kernel gives thread `id`, or nil when there is no such thread.
    public static func name(_ id: Int32) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/self/task/\(id)/comm") else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether the thread `id` has ended: its task is gone from `/proc/self/task`, or the kernel
    /// is ending it (`PF_EXITING` in its flags, set as `do_exit` begins). `pthread_join` returns
    /// when the kernel clears the thread's id, inside `do_exit` and a moment before the task is
    /// removed; on a loaded machine the task was seen in that moment (a CI run). A thread still
    /// in its loop has no such flag, whatever its state, so a shutdown that returns early is seen.
    public static func ended(_ id: Int32) -> Bool {
        guard let stat = FileManager.default.contents(atPath: "/proc/self/task/\(id)/stat") else { return true }
        // Fields after the command name's closing parenthesis: state, ppid, pgrp, session,
        // tty_nr, tpgid, flags.
        let text = String(decoding: stat, as: UTF8.self)
        let fields = text.split(separator: ")").last?.split(separator: " ") ?? []
        guard fields.count > 6, let flags = UInt64(fields[6]) else { return false }
        return flags & 0x4 != 0  // PF_EXITING
    }
}
