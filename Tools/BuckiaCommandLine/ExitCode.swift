import BuckiaCore
import BuckiaDatabase
import Foundation

/// The process exit status, documented in Docs/CLI.md.
enum ExitCode: Int32 {
    /// Everything worked.
    case success = 0
    /// The operation failed (I/O, network, corrupt data, a remote error).
    case failure = 1
    /// The command was called wrongly, or a path argument is not a valid key.
    case usage = 2
    /// The object, file or remote does not exist.
    case notFound = 3
    /// Credentials were refused or do not allow the operation.
    case denied = 4
    /// The configuration file or environment is malformed or incomplete.
    case configuration = 5
    /// `conformance` ran, and at least one scenario failed.
    case conformanceFailed = 6
    /// A tree operation finished, but left out keys the backend holds that Buckia cannot
    /// address (each named on standard error).
    case partial = 7
    /// `check` ran, and the two sides differ.
    case differences = 8
    /// A diff file was refused (`db apply`, `db inspect`, `db send`): hostile, damaged, or in
    /// conflict with the local schema; the database was not changed.
    case refused = 9
    /// Interrupted (SIGINT, Ctrl-C), as a shell reports it: 128 + 2.
    case interrupted = 130
    /// Terminated (SIGTERM): 128 + 15.
    case terminated = 143

    /// The status of a command that stopped cleanly because of `signal`.
    static func stopped(by signal: Int32) -> ExitCode { signal == SIGTERM ? .terminated : .interrupted }

    /// The exit status for one file's failure within a sync: the
    /// command itself was called rightly, so an invalid name or path there is a failure (1),
    /// never a usage error (2).
    static func fromFileFailure(_ error: BuckiaError) -> ExitCode {
        let status = from(error)
        return status == .usage ? .failure : status
    }

    /// The exit status for an error.
    static func from(_ error: BuckiaError) -> ExitCode {
        if error.cause is DiffProblem { return .refused }
        return switch error.code {
        case .notFound: .notFound
        case .unauthorized, .permissionDenied: .denied
        case .invalidConfiguration: .configuration
        case .invalidPath: .usage
        default: .failure
        }
    }
}
