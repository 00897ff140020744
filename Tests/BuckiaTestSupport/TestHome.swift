import BuckiaCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Homes for code that reads a user's configuration files (`~/.aws/credentials`,
/// `~/.config/rclone/rclone.conf`, `~/.config/buckia/config.json`): folders the test process
/// made, so no test reads the machine user's files, writes beside them, or depends on what a
/// fixed path such as `/nonexistent` holds on this machine.
public enum TestHome {
    /// An empty folder of this process's own, made on first use and removed when it exits.
    public static var empty: String { shared.path }

    /// ``environment(in:)`` for this process's home (``empty``): for a `BuckiaClient` or
    /// provider in a test, whose sync state and locks then go under the home's
    /// `.local/state`, never the machine user's.
    public static var processEnvironment: [String: String] { environment(in: shared) }

    /// Environment values that keep a program to `home`: `HOME` and the XDG folders inside it,
    /// and rclone's and the AWS tools' configuration files named there but not made, so each
    /// reads no configuration unless the caller writes one.
    public static func environment(in home: URL) -> [String: String] {
        [
            "HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path,
            "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path, "XDG_DATA_HOME": home.appendingPathComponent(".local/share").path,
            "XDG_STATE_HOME": home.appendingPathComponent(".local/state").path,
            "RCLONE_CONFIG": home.appendingPathComponent(".absent-rclone.conf").path,
            "AWS_CONFIG_FILE": home.appendingPathComponent(".absent-aws-config").path,
            "AWS_SHARED_CREDENTIALS_FILE": home.appendingPathComponent(".absent-aws-credentials").path,
        ]
    }

    private static let shared: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-empty-home-\(getpid())-\(UUID().uuidString)", isDirectory: true)
        // A failure here shows as the test's own failure to find what it expects in the home.
        _ = mkdir(url.path, 0o700)
        removal.withLock { $0 = url.path }
        atexit {
            guard let path = TestHome.removal.withLock({ $0 }) else { return }
            // Removed whole: a program under test may have written into it.
            do { try FileManager.default.removeItem(atPath: path) } catch {}
        }
        return url
    }()

    /// The folder to remove at exit.
    private static let removal = Locked<String?>(nil)
}
