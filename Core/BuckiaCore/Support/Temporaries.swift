import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Buckia's temporary files: how they are named, which ones this process is writing, and how
/// the ones a killed process left behind are found and removed.
///
/// Every temporary file is named `.buckia-<id>.tmp` and held under an exclusive `flock` by its
/// writer for as long as it exists, so the lock is the proof of ownership: the kernel drops it
/// when the writer dies, however it dies. ``sweep(_:now:)`` removes the ones nobody holds.
/// A process that is interrupted (SIGINT, SIGTERM) removes its own first, with ``removeAll()``.
public enum Temporaries {
    /// Paths of the temporary files and folders this process is writing, with whether each
    /// is a folder.
    private static let live = Locked<[String: Bool]>([:])

    /// How old an unlocked temporary must be before a sweep removes it: a file is created an
    /// instant before its writer locks it, and that instant must not look abandoned.
    public static let sweepAge: TimeInterval = 60

    /// A new temporary file name.
    public static func makeName() -> String { ".buckia-\(UUID().uuidString).tmp" }

    /// Whether `name` is one of Buckia's temporary file names (never an object, never copied).
    public static func isTemporaryName<Name: Collection>(_ name: Name) -> Bool where Name.Element == UInt8 {
        name.starts(with: ".buckia-".utf8) && Array(name).suffix(4).elementsEqual(".tmp".utf8) && name.count > 12
    }

    /// Records a temporary this process is writing.
    public static func register(_ path: String, folder: Bool = false) { live.withLock { $0[path] = folder } }

    /// Forgets a temporary that was renamed into place or removed.
    public static func unregister(_ path: String) { _ = live.withLock { $0.removeValue(forKey: path) } }

    /// Removes every temporary this process is writing: what an interrupted process does
    /// before it exits.
    public static func removeAll() {
        for (path, folder) in live.withLock({ $0 }) {
            if folder {
                try? FileManager.default.removeItem(atPath: path)
            } else {
                unlink(path)
            }
        }
        live.withLock { $0.removeAll() }
    }

    /// Removes the temporary files in `folder` whose writer is gone: no process holds their
    /// lock and they are older than ``sweepAge``. Returns how many were removed.
    @discardableResult
    public static func sweep(_ folder: DirectoryHandle, now: Date = Date()) -> Int {
        guard let names = try? folder.rawNames() else { return 0 }
        var removed = 0
        for (name, kind) in names where kind == .file && isTemporaryName(name) {
            guard let text = String(validating: name, as: UTF8.self) else { continue }
            if folder.removeIfAbandoned(text, olderThan: now.addingTimeInterval(-sweepAge)) { removed += 1 }
        }
        return removed
    }
}

extension DirectoryHandle {
    /// Removes the temporary file `name` if no process holds its lock and it was last
    /// modified before `cutoff`.
    func removeIfAbandoned(_ name: String, olderThan cutoff: Date) -> Bool {
        let fd = openat(descriptor, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, LocalFile.modificationDate(of: info) < cutoff else { return false }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        return unlinkat(descriptor, name, 0) == 0
    }
}

extension LocalFile {
    /// Takes this process's exclusive lock on the file: the mark of a live temporary.
    func lockAsTemporary() {
        // A new file cannot be locked by anyone else; a failure only weakens the sweep's proof.
        _ = flock(descriptorForLocking, LOCK_EX | LOCK_NB)
    }
}
