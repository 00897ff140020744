import Foundation

/// An `errno` value that caused a ``BuckiaError``.
public struct POSIXErrorNumber: Error, Sendable, CustomStringConvertible {
    /// The raw `errno` value.
    public let rawValue: Int32

    package init(rawValue: Int32) { self.rawValue = rawValue }

    public var description: String {
        "errno \(rawValue) (\(String(cString: strerror(rawValue))))"
    }
}

extension BuckiaError {
    /// Builds an error from an `errno` value, with a message that says what to do.
    public static func posix(_ errnoValue: Int32, operation: String, path: String?) -> BuckiaError {
        let cause = POSIXErrorNumber(rawValue: errnoValue)
        let subject = path.map { " \($0.debugDescription)" } ?? ""
        switch errnoValue {
        case ENOENT:
            return BuckiaError(.notFound, "Nothing exists at\(subject).", operation: operation, path: path, cause: cause)
        case EEXIST:
            return BuckiaError(.alreadyExists, "Something already exists at\(subject).", operation: operation, path: path, cause: cause)
        case EACCES, EPERM:
            return BuckiaError(
                .permissionDenied, "Permission denied for\(subject); check the file's owner and mode.",
                operation: operation, path: path, cause: cause)
        case EROFS:
            return BuckiaError(
                .permissionDenied, "The file system holding\(subject) is read-only.",
                operation: operation, path: path, cause: cause)
        case ENOSPC, EDQUOT:
            return BuckiaError(
                .io, "No space left to write\(subject); free some disk space and retry.",
                operation: operation, path: path, cause: cause)
        case ENAMETOOLONG:
            return BuckiaError(
                .invalidPath, "The path\(subject) is too long for the file system.",
                operation: operation, path: path, cause: cause)
        case ENOTDIR, EISDIR:
            return BuckiaError(
                .invalidPath, "The path\(subject) crosses a file where a directory is needed, or the reverse.",
                operation: operation, path: path, cause: cause)
        case ELOOP:
            return BuckiaError(
                .invalidPath, "The path\(subject) goes round a loop of symbolic links (or is a link where none may be followed).",
                operation: operation, path: path, cause: cause)
        case EINTR, EAGAIN:
            return BuckiaError(.transient, "The system call was interrupted at\(subject).", operation: operation, path: path, cause: cause)
        default:
            return BuckiaError(.io, "A file operation on\(subject) failed: \(cause).", operation: operation, path: path, cause: cause)
        }
    }
}
