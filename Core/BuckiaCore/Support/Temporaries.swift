import Foundation

/// Buckia's temporary files: how they are named, which ones this process is writing, and how
/// the ones a killed process left behind are found and removed.
///
/// Every temporary file is named `.buckia-<id>.tmp` and held under an exclusive `flock` by its
/// writer for as long as it exists, so the lock is the proof of ownership: the kernel drops it
/// when the writer dies, however it dies. ``sweep(_:now:)`` removes the ones nobody holds.
/// A process that is interrupted (SIGINT, SIGTERM) removes its own first, with ``removeAll()``.
///
/// On Linux a temporary is created without a name (`O_TMPFILE`), locked, and only then linked
/// into its folder, so it is never visible unlocked and a sweep may take every unlocked one at
/// once: a run after a `kill -9` leaves nothing behind. Where that is not available the file
/// is created by name carrying ``creatingMark`` and locked an instant later, when the mark is
/// dropped; a sweep leaves an unlocked temporary alone only while it is empty, marked, younger
/// than ``sweepAge`` and its creator (whose process id the name carries) still runs, since it
/// may be that instant.
package enum Temporaries {
    /// Paths of the temporary files and folders this process is writing, with whether each
    /// is a folder.
    private static let live = Locked<(paths: [String: Bool], closed: Bool)>(([:], false))

    /// How old an unlocked, empty temporary must be before a sweep removes it: where a file is
    /// created an instant before its writer locks it, that instant must not look abandoned.
    package static let sweepAge: TimeInterval = 60

    /// Creates the temporary `name` (relative to the folder descriptor `directory`, or a path
    /// with `AT_FDCWD`) in `folder`, locked and registered; `path` names it in errors and in
    /// the registry. Links are never followed.
    static func create(_ name: String, in directory: Int32, folder: String, path: String, permissions: mode_t) throws -> LocalFile {
        try registering(path, folder: false) {
            let locked = SystemCalls.createLocked(directory, folder, name, access: O_WRONLY, mode: permissions, epoch: true)
            if locked >= 0 { return LocalFile(descriptor: locked, path: path) }
            // No O_TMPFILE here (or no /proc): create by name, marked as being created, then lock.
            let fd = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions | Temporaries.creatingMark)
            guard fd >= 0 else { throw BuckiaError.posix(errno, operation: "create", path: path) }
            let file = LocalFile(descriptor: fd, path: path)
            if file.lockAsTemporary() { file.clearCreatingMark() }
            return file
        }
    }

    /// Creates a temporary through `make` and records it, as one step: an interrupt's
    /// ``removeAllBeforeExit()`` sees either no temporary or a recorded one, never one created
    /// but not yet recorded (which the process, exiting at once, would leave behind).
    ///
    /// - Throws: ``BuckiaError/Code/cancelled`` once ``removeAllBeforeExit()`` has run (nothing is
    ///   created then), or what `make` throws.
    static func registering<Made>(_ path: String, folder: Bool, _ make: () throws -> Made) throws -> Made {
        try live.withLock { state in
            guard !state.closed else {
                throw BuckiaError(.cancelled, "The process is exiting; no new temporary files.", operation: "create", path: path)
            }
            let made = try make()
            state.paths[path] = folder
            return made
        }
    }

    /// The mode bit a temporary created by name carries from its creation until its writer
    /// holds its lock (the sticky bit, which means nothing on a Linux file): the one window in
    /// which a live writer's temporary is unlocked. A sweep spares an unlocked temporary only
    /// while it is empty, young and so marked; any other unlocked temporary is abandoned, even
    /// an empty one dated now (a writer killed as its first `write` began: the kernel sets the
    /// times before the bytes, so the kill harness saw exactly that).
    ///
    /// Darwin and the BSDs strip the sticky bit from a file being created, so there no mark
    /// can be set: every empty young unlocked temporary is spared (``marksCreation``).
    static let creatingMark: mode_t = S_ISVTX

    /// Whether this platform keeps ``creatingMark`` on a file being created (Linux does).
    #if os(Linux)
    static let marksCreation = true
    #else
    static let marksCreation = false
    #endif

    /// A new temporary file name, `.buckia-<token>-<pid>-<n>.tmp`: this process's random
    /// token, its process id and a counter. Unique without a system call per name (`UUID()`
    /// opened `/dev/urandom` for every one, a third of the system calls a small file's write
    /// made beyond rsync's). The process id lets a sweep tell a file being created this
    /// instant from one whose creator was killed in that instant (``creatorIsGone(_:)``).
    package static func makeName() -> String {
        let number = counter.withLock { value in
            value &+= 1
            return value
        }
        return ".buckia-\(processToken)-\(processID)-\(number).tmp"
    }

    private static let processID = getpid()

    /// The process id in a temporary's name (see ``makeName()``), or nil for a name without
    /// one (a name older Buckia versions made, or not Buckia's).
    package static func creator(ofTemporary name: String) -> pid_t? {
        guard name.hasPrefix(".buckia-"), name.hasSuffix(".tmp") else { return nil }
        let parts = name.dropFirst(".buckia-".count).dropLast(".tmp".count).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, let pid = pid_t(parts[1]), pid > 0 else { return nil }
        return pid
    }

    /// Whether the process that named the temporary `name` has certainly exited: its id, from
    /// the name, belongs to no process on this machine. False when it runs, when the name
    /// carries no id, or when it cannot be told (a process of another user answers `EPERM`:
    /// it runs). A writer on another machine sharing the folder, or in another pid namespace,
    /// looks gone: a sweep there may take its temporary in the instant between create and
    /// lock, and that writer's rename then fails with a typed error instead of losing data.
    package static func creatorIsGone(_ name: String) -> Bool {
        guard let pid = creator(ofTemporary: name) else { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    /// 64 random bits drawn once per process: names from two processes never meet.
    private static let processToken: String = {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next()
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }()

    private static let counter = Locked<UInt64>(0)

    /// Whether `name` is one of Buckia's temporary file names (never an object, never copied).
    /// Not generic: called across modules, a generic version ran unspecialised (440
    /// instructions a name a listing met, where the first byte decides nearly all).
    package static func isTemporaryName(_ name: [UInt8]) -> Bool {
        // Nearly every name a listing meets fails at its first byte.
        guard name.first == UInt8(ascii: "."), name.count > 12 else { return false }
        return name.starts(with: ".buckia-".utf8) && name.reversed().starts(with: "pmt.".utf8)
    }

    /// Records a temporary this process is writing.
    ///
    /// - Throws: ``BuckiaError/Code/cancelled`` once ``removeAllBeforeExit()`` has run: the
    ///   process is exiting, and the caller removes what it just created.
    package static func register(_ path: String, folder: Bool = false) throws {
        let open = live.withLock { state in
            if !state.closed { state.paths[path] = folder }
            return !state.closed
        }
        guard open else { throw BuckiaError(.cancelled, "The process is exiting; no new temporary files.", operation: "create", path: path) }
    }

    /// Forgets a temporary that was renamed into place or removed.
    package static func unregister(_ path: String) { _ = live.withLock { $0.paths.removeValue(forKey: path) } }

    /// Removes every temporary this process is writing and refuses new ones: what an
    /// interrupted process does just before it exits, so a file a worker thread creates in the
    /// meantime cannot outlive it.
    package static func removeAllBeforeExit() {
        live.withLock { $0.closed = true }
        removeAll()
    }

    /// Removes every temporary this process is writing: what an interrupted process does
    /// before it exits.
    package static func removeAll() { removeAll { _ in true } }

    /// Removes the temporaries this process is writing whose path satisfies `included`:
    /// files first, then folders, so a file renamed into a temporary folder (a relay's
    /// download) cannot appear in it while it is being removed.
    package static func removeAll(where included: (String) -> Bool) {
        let paths = live.withLock { $0.paths }.filter { included($0.key) }
        for (path, folder) in paths where !folder { unlink(path) }
        for (path, folder) in paths where folder { try? FileManager.default.removeItem(atPath: path) }
        live.withLock { $0.paths = $0.paths.filter { !included($0.key) } }
    }

    /// Removes the temporary files in `folder` whose writer is gone: no process holds their
    /// lock, and they hold bytes or are older than ``sweepAge``. Returns how many were removed.
    @discardableResult
    package static func sweep(_ folder: DirectoryHandle, now: Date = Date()) -> Int {
        guard let names = try? folder.rawNames() else { return 0 }
        var removed = 0
        let cutoff = now.addingTimeInterval(-sweepAge)
        for (name, kind) in names where (kind == .file || kind == .folder) && isTemporaryName(name) {
            guard let text = String(validating: name, as: UTF8.self) else { continue }
            let gone = kind == .file ? folder.removeIfAbandoned(text, olderThan: cutoff) : folder.removeFolderIfAbandoned(text, olderThan: cutoff)
            if gone { removed += 1 }
        }
        return removed
    }

    /// Creates the temporary folder `name` (mode 0700) in `parent` and locks it: a private
    /// place for a temporary file whose writer renames it (a download), which the folder's
    /// lock then covers. Keep the returned handle open for as long as the folder is in use.
    static func createFolder(_ name: String, in parent: DirectoryHandle) throws -> DirectoryHandle {
        // Visible unlocked for an instant, empty, new and marked as being created: a sweep
        // leaves such a folder alone. Once locked the mark goes, so an unlocked folder without
        // it is abandoned however young (its writer was killed before writing into it).
        guard mkdirat(parent.descriptor, name, 0o700 | creatingMark) == 0 else {
            throw BuckiaError.posix(errno, operation: "create temporary folder", path: parent.child(name))
        }
        let handle = try parent.folder(name, create: false)
        if flock(handle.descriptor, LOCK_EX | LOCK_NB) == 0 { _ = fchmod(handle.descriptor, 0o700) }
        return handle
    }
}

extension DirectoryHandle {
    /// Removes the temporary file `name` if no process holds its lock, unless it may be one
    /// being created this instant: empty, modified after `cutoff`, still carrying
    /// ``Temporaries/creatingMark`` (created by name where `O_TMPFILE` is missing, its writer
    /// between create and lock), and its creator still running (a kill in that instant left
    /// such a file, which the rerun right after it must take: the portable kill harness). A temporary made through `O_TMPFILE` is locked before it has a
    /// name, and one made by name loses the mark once locked, so any other unlocked temporary
    /// is abandoned.
    func removeIfAbandoned(_ name: String, olderThan cutoff: Date) -> Bool {
        let fd = openat(descriptor, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        let marked = !Temporaries.marksCreation || (info.st_mode & Temporaries.creatingMark) != 0
        let beingCreated = info.st_size == 0 && marked && LocalFile.modificationDate(of: info) >= cutoff
            && !Temporaries.creatorIsGone(name)
        guard !beingCreated else { return false }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        return unlinkat(descriptor, name, 0) == 0
    }
}

extension DirectoryHandle {
    /// Removes the temporary folder `name` and what is in it if no process holds its lock,
    /// unless it may be one being created this instant: empty, created after `cutoff`, still
    /// carrying ``Temporaries/creatingMark``, and its creator still running.
    func removeFolderIfAbandoned(_ name: String, olderThan cutoff: Date) -> Bool {
        guard let folder = try? self.folder(name, create: false) else { return false }
        var info = stat()
        guard fstat(folder.descriptor, &info) == 0, flock(folder.descriptor, LOCK_EX | LOCK_NB) == 0 else { return false }
        let empty = (try? folder.rawNames().isEmpty) ?? false
        let marked = !Temporaries.marksCreation || (info.st_mode & Temporaries.creatingMark) != 0
        guard !(empty && marked && LocalFile.modificationDate(of: info) >= cutoff && !Temporaries.creatorIsGone(name)) else { return false }
        return (try? removeTree(name)) != nil
    }

    /// Creates a temporary folder (mode 0700) here, locked and registered: a private place
    /// for files another writer renames into it (a download), which the folder's lock covers
    /// until the returned handle (whose ``path`` is the folder's) is released.
    package func createTemporaryFolder() throws -> (name: String, handle: DirectoryHandle) {
        let name = Temporaries.makeName()
        return (name, try Temporaries.registering(child(name), folder: true) { try Temporaries.createFolder(name, in: self) })
    }

    /// Removes the folder `name` and everything under it, never following a link.
    package func removeTree(_ name: String) throws { try removeTree(bytes: Array(name.utf8)) }

    private func removeTree(bytes name: [UInt8]) throws {
        let path = child(String(decoding: name, as: UTF8.self))
        let fd = (name + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { text in
                text.baseAddress.map { openat(descriptor, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) } ?? -1
            }
        }
        guard fd >= 0 else { throw BuckiaError.posix(errno, operation: "remove", path: path) }
        let folder = DirectoryHandle(descriptor: fd, path: path)
        for (child, kind) in try folder.rawNames() {
            if kind == .folder {
                try folder.removeTree(bytes: child)
                continue
            }
            let result = (child + [0]).withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { text in text.baseAddress.map { unlinkat(fd, $0, 0) } ?? -1 }
            }
            if result != 0 && errno != ENOENT { throw BuckiaError.posix(errno, operation: "remove", path: folder.child(String(decoding: child, as: UTF8.self))) }
        }
        let result = (name + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { text in text.baseAddress.map { unlinkat(descriptor, $0, AT_REMOVEDIR) } ?? -1 }
        }
        guard result == 0 else { throw BuckiaError.posix(errno, operation: "remove", path: path) }
    }
}

extension LocalFile {
    /// Takes this process's exclusive lock on the file: the mark of a live temporary, which
    /// ``Temporaries/sweep(_:now:)`` leaves alone. Keep the file open until it is renamed away
    /// from its temporary name: closing it releases the lock.
    ///
    /// - Returns: Whether the lock was taken (a file system without `flock`, such as some NFS
    ///   mounts, refuses it; the file then keeps ``Temporaries/creatingMark``, which spares it
    ///   from young sweeps).
    @discardableResult
    package func lockAsTemporary() -> Bool {
        // A new file cannot be locked by anyone else; a failure only weakens the sweep's proof.
        flock(descriptorForLocking, LOCK_EX | LOCK_NB) == 0
    }

    /// Drops ``Temporaries/creatingMark`` once the file is locked: from now on a sweep that
    /// finds it unlocked knows its writer is gone.
    func clearCreatingMark() {
        var info = stat()
        guard fstat(descriptorForLocking, &info) == 0, (info.st_mode & Temporaries.creatingMark) != 0 else { return }
        _ = fchmod(descriptorForLocking, info.st_mode & 0o7777 & ~Temporaries.creatingMark)
    }

    /// Creates the temporary file at `url` (which must not exist) and locks it, so a sweep
    /// never takes it while its writer lives and always takes it once the writer is killed.
    /// Keep it open until it has been renamed away.
    ///
    /// On Linux it is made unnamed (`O_TMPFILE`), locked, and only then linked at `url`: it is
    /// never visible unlocked. Made by name, it would be marked (``Temporaries/creatingMark``)
    /// until locked, and a writer killed in that instant left an empty marked file that every
    /// sweep spares for a minute as one being created — after the rerun that should have taken
    /// it. Elsewhere, or where the file system has no `O_TMPFILE`, that is still the way.
    package static func createLockedTemporary(_ url: URL, permissions: mode_t = 0o644) throws -> LocalFile {
        // Not dated 1970 as other temporaries are: a restored empty file keeps the time it is
        // made at.
        let locked = SystemCalls.createLocked(AT_FDCWD, url.deletingLastPathComponent().path, url.path, access: O_WRONLY, mode: permissions, epoch: false)
        if locked >= 0 { return LocalFile(descriptor: locked, path: url.path) }
        // Something is already there: the same refusal a create by name gives.
        if errno == EEXIST { throw BuckiaError.posix(EEXIST, operation: "create", path: url.path) }
        let file = try createExclusive(url, permissions: permissions | Temporaries.creatingMark)
        if file.lockAsTemporary() { file.clearCreatingMark() }
        return file
    }
}
