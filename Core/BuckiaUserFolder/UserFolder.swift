import BuckiaCore
import Foundation

/// A user's local folder, laid out as the seed's folder structure says, and kept 1-to-1 with
/// the user's folder in the bucket:
///
///     <base>/<user-id>/
///         backup.sqlite   a backup of the app's database
///         originals/      original recordings
///         reworked/       downscaled copies for viewing
///         inbound/        database change files from other users, named by KSUID
///
/// The base is application support (the XDG data folder on Linux) or documents (`~/Documents`
/// on Linux), as configured; ``prepare(_:bases:)`` looks in the other one too, and moves a
/// folder it finds there to where the configuration says.
public struct UserFolder: Sendable {
    /// `<base>/<user-id>`.
    public let url: URL
    /// The user the folder belongs to; also the name of the folder in the bucket.
    public let userId: String
    /// Where the folder was found before it was moved here, if it was.
    public let movedFrom: URL?
    /// A second copy found in the other location and left alone (both existed), if any.
    public let strayCopy: URL?

    /// The database backup.
    public var backup: URL { url.appendingPathComponent("backup.sqlite", isDirectory: false) }
    /// Original recordings.
    public var originals: URL { url.appendingPathComponent("originals", isDirectory: true) }
    /// Downscaled recordings.
    public var reworked: URL { url.appendingPathComponent("reworked", isDirectory: true) }
    /// Incoming database change files.
    public var inbound: URL { url.appendingPathComponent("inbound", isDirectory: true) }

    /// The two places a user folder can live.
    public struct Bases: Sendable {
        /// Application support: `~/Library/Application Support` on Apple platforms,
        /// `$XDG_DATA_HOME` (`~/.local/share`) on Linux.
        public var applicationSupport: URL
        /// Documents: the app's documents folder, `$XDG_DOCUMENTS_DIR` or `~/Documents` on Linux.
        public var documents: URL

        /// Names both places.
        public init(applicationSupport: URL, documents: URL) {
            self.applicationSupport = applicationSupport
            self.documents = documents
        }

        /// This system's folders.
        public static var system: Bases {
            Bases(
                applicationSupport: StorageDirectory.applicationSupport(appendingPath: "").url,
                documents: StorageDirectory.documents(appendingPath: "").url)
        }

        func url(for location: FolderStructureConfiguration.Location) -> URL {
            location == .applicationSupport ? applicationSupport : documents
        }
    }

    /// Finds or makes the user's folder where `configuration` says it belongs.
    ///
    /// When it is missing there but present in the other location, it is moved: in one
    /// rename where both are on one file system, else copied, checked byte for byte, put in
    /// place with one rename and only then removed from the old place, so no file is ever
    /// lost, whatever fails (a failed move leaves the old folder as it was). When both exist,
    /// the configured one is used and the other is reported in ``strayCopy``.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` without a user id, or
    ///   with one that is not a single folder name; file system errors.
    public static func prepare(_ configuration: FolderStructureConfiguration, bases: Bases = .system) throws -> UserFolder {
        guard let userId = configuration.userId, !userId.isEmpty, userId != ".", userId != "..", !userId.contains("/"),
            !userId.utf8.contains(0)
        else {
            throw BuckiaError(
                .invalidConfiguration, "The folder structure needs a userId that is one folder name (no '/', not '.' or '..').",
                operation: "prepare user folder", path: "folderStructure.userId")
        }
        let base = configuration.rootPath.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? bases.url(for: configuration.location)
        let wanted = base.appendingPathComponent(userId, isDirectory: true)
        var movedFrom: URL?
        var stray: URL?
        if configuration.rootPath == nil {
            let otherLocation: FolderStructureConfiguration.Location = configuration.location == .applicationSupport ? .documents : .applicationSupport
            let other = bases.url(for: otherLocation).appendingPathComponent(userId, isDirectory: true)
            switch (isFolder(wanted), isFolder(other)) {
            case (false, true):
                try move(other, to: wanted)
                movedFrom = other
            case (true, true):
                stray = other
            default:
                break
            }
        }
        let folder = UserFolder(url: wanted, userId: userId, movedFrom: movedFrom, strayCopy: stray)
        for subfolder in [folder.originals, folder.reworked, folder.inbound] {
            try LocalFile.createDirectories(subfolder.path)
        }
        return folder
    }

    private static func isFolder(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Moves the folder `source` to `destination` (which does not exist), losing nothing.
    static func move(_ source: URL, to destination: URL) throws {
        try LocalFile.createDirectories(destination.deletingLastPathComponent().path)
        if rename(source.path, destination.path) == 0 { return }
        guard errno == EXDEV else { throw BuckiaError.posix(errno, operation: "move user folder", path: source.path) }
        // Another file system: copy beside the destination, check, then rename into place.
        let staging = destination.deletingLastPathComponent().appendingPathComponent(".buckia-moving-\(UUID().uuidString)", isDirectory: true)
        do {
            try copyTree(source, to: staging)
            try verifyTree(source, against: staging)
            guard rename(staging.path, destination.path) == 0 else {
                throw BuckiaError.posix(errno, operation: "move user folder", path: destination.path)
            }
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw BuckiaError.wrapping(error, operation: "move user folder", path: source.path)
        }
        do {
            try FileManager.default.removeItem(at: source)
        } catch {
            throw BuckiaError(
                .io, "The user folder was copied to \(destination.path) and checked, but the old copy could not be removed; remove it by hand.",
                operation: "move user folder", path: source.path, cause: BuckiaError.wrapping(error))
        }
    }

    /// Copies regular files and folders (links are not followed, and are refused), keeping
    /// modification times.
    private static func copyTree(_ source: URL, to destination: URL) throws {
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path) {
            let from = source.appendingPathComponent(name)
            let to = destination.appendingPathComponent(name)
            var info = stat()
            guard lstat(from.path, &info) == 0 else { throw BuckiaError.posix(errno, operation: "copy", path: from.path) }
            switch info.st_mode & S_IFMT {
            case S_IFDIR: try copyTree(from, to: to)
            case S_IFREG:
                let input = try LocalFile.openForReading(from)
                defer { try? input.close() }
                try AtomicFile.copy(from: from, to: to, options: AtomicFile.Options(modificationDate: try input.status().modificationDate))
            default:
                throw BuckiaError(
                    .unsupported, "\(from.path) is a link or special file; move the user folder by hand.", operation: "copy", path: from.path)
            }
        }
    }

    /// Checks that every file of `source` is in `copy` with the same bytes.
    private static func verifyTree(_ source: URL, against copy: URL) throws {
        guard let walker = FileManager.default.enumerator(atPath: source.path) else {
            throw BuckiaError(.io, "The user folder could not be read to check the copy.", path: source.path)
        }
        for case let relative as String in walker {
            let from = source.appendingPathComponent(relative)
            var info = stat()
            guard lstat(from.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            let a = try Hashing.digests(ofFile: from, [.sha256])[.sha256]
            let b = try Hashing.digests(ofFile: copy.appendingPathComponent(relative), [.sha256])[.sha256]
            guard a == b else {
                throw BuckiaError(.checksumMismatch, "The copy of \(relative) does not match the original; nothing was moved.", path: from.path)
            }
        }
    }
}
