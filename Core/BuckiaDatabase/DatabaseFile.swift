import BuckiaCore
import Foundation

/// How every database operation takes the files it is given, as `cp` and `chunk` take theirs.
///
/// SQLite opens whatever path it is handed: a FIFO blocks it forever, `/dev/zero` reads as an
/// endless empty database, and a zero-length file is, to SQLite, a valid database with no
/// tables — restored over a live one, it empties it. So a file is checked before SQLite sees it:
/// anything but a regular file is refused at once (``BuckiaCore/BuckiaError/Code/invalidPath``,
/// opened without blocking), a file that does not begin with SQLite's header is refused
/// (``BuckiaCore/BuckiaError/Code/corrupt``), and a source that is its own destination is refused
/// before anything is written.
package enum DatabaseFile {
    /// What a file must hold to be taken.
    package enum Content: Sendable {
        /// An SQLite database; a zero-length file counts, as SQLite takes it (an empty database).
        case database
        /// An SQLite database of at least one page: what may replace a live database.
        case nonEmptyDatabase
    }

    /// The first 16 bytes of every SQLite database file.
    static let header = Data("SQLite format 3\0".utf8)

    /// Checks that `url` names an existing regular file holding an SQLite database.
    ///
    /// - Parameters:
    ///   - role: What the file is to the operation, for messages ("backup", "database").
    ///   - operation: The operation, for the error.
    /// - Returns: The file's size in bytes.
    /// - Throws: ``BuckiaCore/BuckiaError/Code/notFound`` when nothing is there;
    ///   ``BuckiaCore/BuckiaError/Code/invalidPath`` for a folder, device, FIFO or socket;
    ///   ``BuckiaCore/BuckiaError/Code/corrupt`` for a file that is not an SQLite database (or is
    ///   empty where `content` asks for one that is not); what the file system reports otherwise.
    @discardableResult
    package static func check(_ url: URL, as role: String, for operation: String, content: Content = .database) throws -> Int64 {
        let path = url.path
        let opened: (file: LocalFile, status: stat)
        do {
            opened = try LocalFile.openDescribed(url)
        } catch let error as BuckiaError where error.code == .notFound {
            throw BuckiaError(.notFound, "There is no \(role) at \(path.debugDescription); check the path.", operation: operation, path: path)
        } catch let error as BuckiaError where error.code == .invalidPath {
            // The open named what is there ("… is a FIFO (named pipe), not a regular file").
            throw BuckiaError(.invalidPath, "The \(role) " + error.message, operation: operation, path: path)
        }
        defer { opened.file.closeAfterReading() }
        let size = Int64(opened.status.st_size)
        if size == 0 {
            guard content == .database else {
                throw BuckiaError(
                    .corrupt, "The \(role) \(path.debugDescription) is empty (0 bytes), not an SQLite database; nothing was changed.",
                    operation: operation, path: path)
            }
            return 0
        }
        let start = try opened.file.read(count: header.count, at: 0)
        guard start == header else {
            throw BuckiaError(
                .corrupt, "The \(role) \(path.debugDescription) is not an SQLite database (it does not begin with SQLite's header); nothing was changed.",
                operation: operation, path: path)
        }
        return size
    }

    /// Checks `url` as ``check(_:as:for:content:)`` when something is there; nothing there passes.
    ///
    /// - Returns: The file's size, or nil when there is no file.
    @discardableResult
    package static func checkIfPresent(_ url: URL, as role: String, for operation: String) throws -> Int64? {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            guard errno == ENOENT else { throw BuckiaError.posix(errno, operation: operation, path: url.path) }
            return nil
        }
        return try check(url, as: role, for: operation)
    }

    /// Refuses a source that is its own destination (the same path, a link to it or a hard link).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidPath``.
    package static func checkDistinct(_ source: URL, _ destination: URL, for operation: String) throws {
        guard LocalFile.isSameFile(source, destination) else { return }
        throw BuckiaError(
            .invalidPath, "\(source.path.debugDescription) and \(destination.path.debugDescription) are the same file; \(operation) reads one and writes the other, so name two different files.",
            operation: operation, path: destination.path)
    }
}
