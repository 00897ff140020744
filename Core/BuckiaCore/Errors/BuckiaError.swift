import Foundation

/// The one error type every Buckia API throws.
///
/// Switch on ``code`` to decide what to do; show ``description`` to a person. Messages say
/// what failed, where, and what to do about it. No message, description or cause ever holds
/// a credential: values that could (tokens, keys, signatures) are redacted before an error is
/// built.
///
/// Transport details (HTTP statuses, SQLite result codes, `errno`) live in ``cause``, not in
/// the public codes, so a caller's `switch` works the same over every backend.
public struct BuckiaError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is, independent of the backend that produced it.
    public var code: Code
    /// A sentence for a person: what failed and what to do.
    public var message: String
    /// The operation that failed, such as `upload` or `list`.
    public var operation: String?
    /// The object key, file path or configuration key involved, when there is one.
    public var path: String?
    /// The lower-level error this one wraps.
    public var cause: (any Error & Sendable)?
    /// How long the backend asked callers to wait before trying again, when it said.
    public var retryAfter: Duration?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        operation: String? = nil,
        path: String? = nil,
        cause: (any Error & Sendable)? = nil,
        retryAfter: Duration? = nil
    ) {
        self.code = code
        self.message = message
        self.operation = operation
        self.path = path
        self.cause = cause
        self.retryAfter = retryAfter
    }

    /// Whether repeating the same request later may succeed.
    ///
    /// Only ``Code/transient`` and ``Code/rateLimited`` failures are retryable: retrying a
    /// missing object or a bad signature only repeats the failure.
    public var isRetryable: Bool {
        code == .transient || code == .rateLimited
    }

    public var description: String {
        var text = message
        var context: [String] = []
        if let operation { context.append("operation: \(operation)") }
        if let path { context.append("path: \(path.debugDescription)") }
        if !context.isEmpty { text += " (\(context.joined(separator: ", ")))" }
        if let cause { text += " [cause: \(cause)]" }
        return "\(code): \(text)"
    }

    public var debugDescription: String { "BuckiaError(\(description))" }
}

extension BuckiaError {
    /// The kind of a ``BuckiaError``.
    ///
    /// A struct over a private enum, so new codes can be added without breaking callers'
    /// exhaustive switches (swift-nio's `FileSystemError.Code` shape). The names follow
    /// OpenDAL's error kinds.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Wrapped: String, Hashable, Sendable {
            case notFound, alreadyExists, permissionDenied, unauthorized, conditionNotMatch
            case rateLimited, invalidConfiguration, invalidPath, checksumMismatch
            case unsupported, corrupt, transient, cancelled, io
        }

        fileprivate let wrapped: Wrapped

        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The object, file or key does not exist.
        public static var notFound: Code { Code(.notFound) }
        /// Something already exists where a new one was to be created.
        public static var alreadyExists: Code { Code(.alreadyExists) }
        /// The credentials are valid but do not allow this operation.
        public static var permissionDenied: Code { Code(.permissionDenied) }
        /// The credentials are missing, wrong or expired.
        public static var unauthorized: Code { Code(.unauthorized) }
        /// A precondition (ETag, version, If-None-Match) did not hold.
        public static var conditionNotMatch: Code { Code(.conditionNotMatch) }
        /// The backend asked the caller to slow down; retry after ``BuckiaError/retryAfter``.
        public static var rateLimited: Code { Code(.rateLimited) }
        /// A configuration value is missing, malformed or contradictory.
        public static var invalidConfiguration: Code { Code(.invalidConfiguration) }
        /// An object key or path is not acceptable (empty, absolute, `..`, NUL, too long).
        public static var invalidPath: Code { Code(.invalidPath) }
        /// Bytes arrived, but their checksum is not the one expected.
        public static var checksumMismatch: Code { Code(.checksumMismatch) }
        /// The backend does not offer this operation; see its capabilities.
        public static var unsupported: Code { Code(.unsupported) }
        /// Stored or received data is malformed and cannot be used.
        public static var corrupt: Code { Code(.corrupt) }
        /// A temporary failure (connection lost, 5xx, timeout); retrying may succeed.
        public static var transient: Code { Code(.transient) }
        /// The operation was cancelled by its caller.
        public static var cancelled: Code { Code(.cancelled) }
        /// A local input/output failure (disk full, read-only file system, I/O error).
        public static var io: Code { Code(.io) }

        public var description: String { wrapped.rawValue }
    }
}

extension BuckiaError {
    /// Wraps any error as a ``BuckiaError``, keeping one that already is.
    ///
    /// Cancellation maps to ``Code/cancelled``; `errno`-based Cocoa and POSIX errors map to
    /// the nearest code. Anything else becomes an ``Code/io`` failure with the original as cause.
    public static func wrapping(
        _ error: any Error, operation: String? = nil, path: String? = nil
    ) -> BuckiaError {
        if let error = error as? BuckiaError {
            var copy = error
            if copy.operation == nil { copy.operation = operation }
            if copy.path == nil { copy.path = path }
            return copy
        }
        if error is CancellationError {
            return BuckiaError(.cancelled, "The operation was cancelled.", operation: operation, path: path)
        }
        if let posix = error as? POSIXError {
            return BuckiaError.posix(posix.code.rawValue, operation: operation ?? "file operation", path: path)
        }
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain {
            return BuckiaError.posix(Int32(nsError.code), operation: operation ?? "file operation", path: path)
        }
        if nsError.domain == NSCocoaErrorDomain {
            return cocoa(nsError, operation: operation, path: path)
        }
        if nsError.domain == NSURLErrorDomain {
            // A URLError carries the failing URL, with any signature or token in its query:
            // described by code and message only. Only a network failure is worth a retry
            // (timed out, connection lost or refused, host not found); a bad URL, a refused
            // certificate or a cancelled task would fail the same way again.
            let transientCodes: Set<Int> = [-1001, -1003, -1004, -1005, -1006, -1009, -1018, -1019, -1020]
            if nsError.code == -999 {
                return BuckiaError(.cancelled, "The request was cancelled.", operation: operation, path: path)
            }
            return BuckiaError(
                transientCodes.contains(nsError.code) ? .transient : .io,
                "A network request failed: \(URLRedaction.scrub(nsError.localizedDescription)) (\(nsError.domain) \(nsError.code)).",
                operation: operation, path: path, cause: SendableErrorDescription(error))
        }
        return BuckiaError(
            .io, "The operation failed: \(URLRedaction.scrub(String(describing: error)))", operation: operation, path: path,
            cause: SendableErrorDescription(error))
    }
}

/// Keeps the text of a non-`Sendable` error so it can travel as a ``BuckiaError/cause``.
///
/// URLs in the text lose their query and user information, where signatures and tokens live.
public struct SendableErrorDescription: Error, Sendable, CustomStringConvertible {
    /// The original error's description, with URLs scrubbed.
    public let description: String

    /// Captures the description of `error`.
    public init(_ error: any Error) {
        self.description = URLRedaction.scrub(String(describing: error))
    }
}

/// Removes the parts of URLs that carry credentials from free text.
public enum URLRedaction {
    /// `text` with every `scheme://…` URL's user information and query replaced by
    /// `<REDACTED>`: `https://u:p@h/x?X-Amz-Signature=…` becomes `https://<REDACTED>@h/x?<REDACTED>`.
    public static func scrub(_ text: String) -> String {
        var output = ""
        var rest = Substring(text)
        while let marker = rest.range(of: "://") {
            let schemeStart = rest[..<marker.lowerBound].lastIndex { !($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
                .map { rest.index(after: $0) } ?? rest.startIndex
            output += rest[..<schemeStart]
            let end = rest[marker.upperBound...].firstIndex { $0.isWhitespace || "\"'<>,;)]}".contains($0) } ?? rest.endIndex
            output += scrubURL(rest[schemeStart..<end], schemeLength: rest.distance(from: schemeStart, to: marker.upperBound))
            rest = rest[end...]
        }
        return output + rest
    }

    private static func scrubURL(_ url: Substring, schemeLength: Int) -> String {
        let scheme = url.prefix(schemeLength)
        var remainder = url.dropFirst(schemeLength)
        var result = String(scheme)
        let authorityEnd = remainder.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? remainder.endIndex
        if let at = remainder[..<authorityEnd].lastIndex(of: "@") {
            result += "<REDACTED>@"
            remainder = remainder[remainder.index(after: at)...]
        }
        if let query = remainder.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            return result + remainder[..<query] + "?<REDACTED>"
        }
        return result + remainder
    }
}

extension String {
    /// The text as a clause to end with a period of one's own: trailing spaces and full stops
    /// removed, so a server's "…signing method." does not become "method.." in a message.
    public var withoutTerminalPeriod: String {
        var text = Substring(self)
        while let last = text.last, last == "." || last == " " { text = text.dropLast() }
        return String(text)
    }
}

extension BuckiaError {
    /// A Foundation file error, described by its path and its cause rather than by its
    /// localized text (on Linux often "The operation could not be completed. (NSCocoaErrorDomain
    /// error 512.)"): the underlying `errno` when Foundation kept one, otherwise a phrase per code.
    static func cocoa(_ error: NSError, operation: String?, path: String?) -> BuckiaError {
        let filePath = (error.userInfo[NSFilePathErrorKey] as? String) ?? (error.userInfo[NSURLErrorKey] as? URL)?.path ?? path
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return .posix(Int32(truncatingIfNeeded: underlying.code), operation: operation ?? "file operation", path: filePath)
        }
        let (code, phrase): (Code, String) =
            switch CocoaError.Code(rawValue: error.code) {
            case .fileNoSuchFile, .fileReadNoSuchFile: (.notFound, "it does not exist")
            case .fileWriteNoPermission, .fileReadNoPermission: (.permissionDenied, "permission denied; check the owner and mode")
            case .fileWriteFileExists: (.alreadyExists, "something is already there (a file where a folder is needed, or the reverse)")
            case .fileWriteOutOfSpace: (.io, "the disk is full")
            case .fileWriteVolumeReadOnly: (.permissionDenied, "the volume is read-only")
            case .fileReadCorruptFile: (.corrupt, "the file is damaged")
            case .fileReadTooLarge: (.io, "the file is too large to read whole")
            case .fileWriteInvalidFileName, .fileReadInvalidFileName: (.invalidPath, "the name is not valid here")
            default: (.io, "Foundation file error \(error.code)")
            }
        let subject = filePath.map { "on \($0.debugDescription) " } ?? ""
        return BuckiaError(
            code, "The file operation \(subject)failed: \(phrase).", operation: operation, path: path ?? filePath,
            cause: SendableErrorDescription(error))
    }
}
