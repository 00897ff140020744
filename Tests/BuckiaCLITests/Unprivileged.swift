import BuckiaTestSupport
import Foundation

/// Runs `buckia` as a user whom permission bits bind, for tests of unreadable files and folders.
///
/// Root reads a file of mode 000 as easily as any other, and CI runs the tests as root: there
/// the command runs as `nobody` (uid and gid 65534, no supplementary groups) through
/// util-linux's `setpriv`, and the test hands its folder to that user first. Run as any other
/// user, the command runs as it is. As root without a working `setpriv` the tests throw: a
/// permission test that cannot drop root must fail, never pass without having tested anything.
enum Unprivileged {
    static let id = 65534

    /// The words to put before a command in a script (`$U $B ls …`): empty unless root.
    ///
    /// - Throws: ``Failure`` when running as root and `setpriv` cannot run the built `buckia`
    ///   as uid 65534.
    static func prefix() throws -> String {
        guard geteuid() == 0 else { return "" }
        let words = "/usr/bin/setpriv --reuid=\(id) --regid=\(id) --clear-groups"
        // The child must find the executable on a path it may search, and really be someone else.
        let probe = try run(
            "/bin/sh", ["-c", "\(words) -- /bin/sh -c 'test \"$(id -u)\" = \(id) && test -x \"$1\"' probe \"$1\"", "sh", CLIHarness.executable.path])
        guard probe == 0 else {
            throw Failure(
                description: "Running as root, and `\(words)` could not run \(CLIHarness.executable.path) as uid \(id) (status \(probe)): "
                    + "install util-linux's setpriv and make the build folder searchable by others, or run the tests as an ordinary user.")
        }
        return words
    }

    /// Gives `folder` and everything in it to the unprivileged user, when running as root, so
    /// the command run through ``prefix()`` can read and write it.
    static func handOver(_ folder: URL) throws {
        guard geteuid() == 0 else { return }
        let status = try run("/bin/chown", ["-R", "\(id):\(id)", folder.path])
        guard status == 0 else { throw Failure(description: "chown -R \(id) \(folder.path) exited \(status)") }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
        try ToolRun.run(path: URL(fileURLWithPath: executable), arguments, exactEnvironment: ProcessInfo.processInfo.environment, limit: .seconds(60)).status
    }
}
