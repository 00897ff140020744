import BuckiaCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a ``FolderWatcher`` has seen since it was last asked.
struct FolderActivity: Sendable {
    /// Something changed (or events were lost, which counts as a change).
    var changed = false
    /// When the last event arrived.
    var last: ContinuousClock.Instant?
    /// Files written to and not yet closed, relative to the folder.
    var writing: Set<String> = []
}

/// Changes under a local folder as they happen: inotify where the build has Linux's fast paths
/// (CLinux), one watch per folder, folders made later watched as they appear. Elsewhere (Apple
/// platforms, the portable build) it sees nothing, and a watch relies on its polling interval
/// alone (FSEvents is neither compiled nor tested here).
///
/// A lost event (the kernel's queue overflowed) only counts as a change: every pass lists
/// both sides whole, so nothing is missed, only noticed later.
final class FolderWatcher: Sendable {
    private let root: URL
    private let activity = Locked(FolderActivity())
    /// The folder each watch is on, by watch descriptor: changed by `init` and the reader
    /// thread only (the lock is never waited for).
    private let watches = Locked<[Int32: String]>([:])
    private let descriptor: Int32
    private let wake: (read: Int32, write: Int32)

    #if canImport(CLinux)
    private static let mask = UInt32(
        IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
        | UInt32(IN_DONT_FOLLOW) | UInt32(IN_ONLYDIR) | UInt32(IN_EXCL_UNLINK)
    #endif

    /// Starts watching `root` and every folder under it.
    init(root: URL) throws {
        self.root = root
        var ends: [Int32] = [-1, -1]
        #if canImport(CLinux)
        descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { throw BuckiaError.posix(errno, operation: "watch", path: root.path) }
        guard pipe(&ends) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw BuckiaError.posix(code, operation: "watch", path: root.path)
        }
        wake = (ends[0], ends[1])
        addTree("")
        let thread = Thread { [self] in self.read() }
        thread.name = "buckia-watch"
        thread.start()
        #else
        descriptor = -1
        wake = (-1, -1)
        #endif
    }

    /// Stops watching; the reader thread ends.
    func close() {
        #if canImport(CLinux)
        var byte: UInt8 = 1
        _ = Glibc.write(wake.write, &byte, 1)
        #endif
    }

    /// What was seen since the last ``take()``, clearing the change flag (files still being
    /// written stay listed).
    func take() -> FolderActivity {
        activity.withLock { now in
            defer { now.changed = false }
            return now
        }
    }

    /// What was seen, without clearing it.
    func peek() -> FolderActivity { activity.withLock { $0 } }

    /// Forgets files being written that are gone (a writer that deleted or renamed its file
    /// reports no close for the old name).
    func dropVanished() {
        activity.withLock { now in
            now.writing = now.writing.filter { FileManager.default.fileExists(atPath: root.appendingPathComponent($0).path) }
        }
    }

    #if canImport(CLinux)
    /// Watches `relative` (a folder) and every folder under it. A folder that cannot be
    /// watched (gone already, no permission) is left out: the next pass lists it anyway.
    private func addTree(_ relative: String) {
        let path = relative.isEmpty ? root.path : root.appendingPathComponent(relative).path
        let watch = inotify_add_watch(descriptor, path, Self.mask)
        guard watch >= 0 else { return }
        watches.withLock { $0[watch] = relative }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            return  // gone as it was watched: the next pass lists what is there
        }
        for name in names {
            var info = stat()
            let child = relative.isEmpty ? name : relative + "/" + name
            if lstat(path + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { addTree(child) }
        }
    }

    /// The reader thread: waits for events (or the wake-up), and notes each.
    private func read() {
        defer {
            Glibc.close(descriptor)
            Glibc.close(wake.read)
            Glibc.close(wake.write)
        }
        let header = MemoryLayout<inotify_event>.size
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0, descriptors[1].revents == 0 else { return }
            let count = Glibc.read(descriptor, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            var offset = 0
            while offset + header <= count {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                let nameBytes = buffer[(offset + header)..<min(count, offset + header + Int(event.len))]
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                offset += header + Int(event.len)
                note(event, name: name)
            }
        }
    }

    private func note(_ event: inotify_event, name: String) {
        let mask = event.mask
        func has(_ flag: Int32) -> Bool { mask & UInt32(flag) != 0 }
        let folder = watches.withLock { watches in
            if has(IN_IGNORED) { watches[event.wd] = nil }
            return watches[event.wd]
        }
        let path = folder.map { $0.isEmpty ? name : $0 + "/" + name } ?? name
        if has(IN_ISDIR), has(IN_CREATE) || has(IN_MOVED_TO), folder != nil { addTree(path) }
        activity.withLock { now in
            now.changed = true
            now.last = .now
            guard !has(IN_ISDIR), !name.isEmpty else { return }
            if has(IN_MODIFY) { now.writing.insert(path) }
            if has(IN_CLOSE_WRITE) || has(IN_DELETE) || has(IN_MOVED_FROM) { now.writing.remove(path) }
        }
    }
    #endif
}
