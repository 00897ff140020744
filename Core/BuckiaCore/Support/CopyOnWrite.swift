import Foundation

/// Copy-on-write clones: a whole-file copy that shares the source's blocks until either file
/// is written (`clonefile` on APFS, `FICLONE` on Btrfs and XFS), taking a moment and no space
/// whatever the size.
///
/// Used where a copy is of a file's bytes as they are now: a copy within a folder backend, an
/// upload into one and a download out of one, `buckia cp` between local paths, a user folder's
/// copy. A clone is taken in one step, so it is at least as consistent as reading the bytes;
/// never for a live database, whose consistent copy is SQLite's backup (Docs/Database.md).
///
/// The clone is made under a fresh name in a private, locked temporary folder, then dated,
/// given its mode and renamed into place by the caller, as a written temporary is: Apple's
/// call creates its file by name, so the same shape serves both platforms, and a clone killed
/// half-made is a temporary folder the next sweep removes. Where the file systems cannot clone
/// (ext4, tmpfs, two file systems), the pair is remembered for the process and the caller
/// copies the bytes, at the cost of one refused call per pair.
package enum CopyOnWrite {
    /// The (source device, folder device) pairs that refused a clone this process.
    private static let refusing = Locked<Set<[UInt64]>>([])

    /// The smallest file cloned: below it, writing the bytes takes fewer system calls than
    /// making a clone's private folder, and a clone saves at most a few blocks.
    package static let minimumSize: Int64 = 256 << 10

    /// The name of the clone inside its private folder.
    package static let cloneName = "clone"

    /// A clone being made: the file, open for reading and writing (mode 0600 until its maker
    /// gives it its own), in a private temporary folder that ``discard()`` removes once the
    /// clone has been moved away or given up.
    package final class Clone {
        /// The clone, open.
        package let file: LocalFile
        /// The clone's path, to move it into place.
        package var path: String { folder.child(CopyOnWrite.cloneName) }
        /// The private folder holding it, and the folder that holds that.
        package let folder: DirectoryHandle
        private let parent: DirectoryHandle
        private let folderName: String

        fileprivate init(file: LocalFile, folder: DirectoryHandle, parent: DirectoryHandle, folderName: String) {
            self.file = file
            self.folder = folder
            self.parent = parent
            self.folderName = folderName
        }

        /// Closes the clone and removes its private folder (with the clone, if it is still
        /// there). Housekeeping: a folder that cannot be removed is a temporary a later sweep takes.
        package func discard() {
            do { try file.close() } catch {}
            do { try parent.removeTree(folderName) } catch {}
            Temporaries.unregister(folder.path)
        }
    }

    /// Clones `source` into a new private temporary folder in `parent` (which must be on the
    /// file system the clone is wanted on).
    ///
    /// - Returns: The clone, or nil — with nothing created — when `source` is smaller than
    ///   ``minimumSize``, these file systems cannot clone, or `parent` cannot take a temporary
    ///   folder (the byte copy that follows reports why).
    /// - Throws: What the file system reports for any other failure of the clone (`ENOSPC`,
    ///   `EIO`): a byte copy would meet it too.
    package static func clone(_ source: LocalFile, in parent: DirectoryHandle) throws -> Clone? {
        var sourceStatus = stat()
        var parentStatus = stat()
        guard fstat(source.descriptorForLocking, &sourceStatus) == 0, fstat(parent.descriptor, &parentStatus) == 0,
            (sourceStatus.st_mode & S_IFMT) == S_IFREG, Int64(sourceStatus.st_size) >= minimumSize
        else { return nil }
        let pair = [UInt64(truncatingIfNeeded: sourceStatus.st_dev), UInt64(truncatingIfNeeded: parentStatus.st_dev)]
        guard !refusing.withLock({ $0.contains(pair) }) else { return nil }
        let name: String
        let folder: DirectoryHandle
        do {
            (name, folder) = try parent.createTemporaryFolder()
        } catch {
            return nil
        }
        func giveUp() {
            do { try parent.removeTree(name) } catch {}
            Temporaries.unregister(folder.path)
        }
        guard SystemCalls.cloneFile(source.descriptorForLocking, folder.descriptor, cloneName) == 0 else {
            let code = errno
            giveUp()
            switch code {
            case EOPNOTSUPP, ENOTSUP, EXDEV, ENOTTY, ENOSYS:
                // The file systems cannot clone: said once for the pair.
                refusing.withLock { _ = $0.insert(pair) }
                return nil
            case EINVAL:
                // This file cannot be cloned (a range the file system will not share); the next may.
                return nil
            default:
                throw BuckiaError.posix(code, operation: "clone", path: source.path)
            }
        }
        let fd = openat(folder.descriptor, cloneName, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            giveUp()
            throw BuckiaError.posix(code, operation: "open", path: folder.child(cloneName))
        }
        let clone = Clone(file: LocalFile(descriptor: fd, path: folder.child(cloneName)), folder: folder, parent: parent, folderName: name)
        do {
            // Apple's clone takes the source's mode: private until its maker gives it its own.
            try clone.file.setPermissions(0o600)
        } catch {
            clone.discard()
            throw error
        }
        return clone
    }

    /// Forgets which pairs of file systems refused a clone (for tests that mount one).
    package static func forgetRefusals() { refusing.withLock { $0.removeAll() } }

    /// The process's file-creation mask, which a clone's mode is given less, as a written
    /// file's is by the kernel; read once (``SystemCalls/creationMask()``).
    package static let creationMask: mode_t = SystemCalls.creationMask()
}
