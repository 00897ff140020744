#if canImport(CLinux)
import CLinux
#endif
import Foundation

/// The system calls where platforms differ, in one place: Linux's fast paths through the CLinux
/// shims when the build has them, and the POSIX path every other build takes — Apple platforms,
/// and Linux built with `BUCKIA_PORTABLE=1`, which is how that path is compiled and tested here
/// (Docs/Platforms.md). Each function keeps one contract on every path; where a platform has
/// no such call it says so the way the Linux call would fail (`ENOSYS`, `EOPNOTSUPP`), and the
/// caller takes its fallback.
///
/// The `canImport(Darwin)` branches are the only lines here this project's machines never
/// compile; Docs/Platforms.md lists them.
package enum SystemCalls {
    /// Names the calling thread as the system's tools show it (15 bytes at most on Linux).
    package static func nameThread(_ name: String) {
        #if canImport(CLinux)
        buckia_name_thread(name)
        #elseif canImport(Darwin)
        _ = pthread_setname_np(name)
        #endif
    }

    /// The kernel's id of the calling thread (what `/proc/self/task` lists), or -1 where the
    /// build has no way to ask.
    package static func threadID() -> Int32 {
        #if canImport(CLinux)
        buckia_thread_id()
        #else
        -1
        #endif
    }

    /// A thread started by ``startThread(stackSize:_:)``, joined once by its owner.
    package struct JoinableThread: Sendable {
        #if canImport(Darwin)
        /// The `pthread_t`'s bits: Darwin's is a pointer, which is not `Sendable`.
        fileprivate let handle: UInt
        #else
        fileprivate let handle: pthread_t
        #endif

        /// Waits for the thread to return; it is gone from the process when this returns.
        package func join() {
            #if canImport(Darwin)
            if let thread = pthread_t(bitPattern: handle) { _ = pthread_join(thread, nil) }
            #else
            _ = pthread_join(handle, nil)
            #endif
        }
    }

    /// Starts a joinable thread running `body`, with a stack of `stackSize` bytes.
    ///
    /// - Throws: ``BuckiaError/Code/io`` naming the error when the system refuses a thread.
    package static func startThread(stackSize: Int, _ body: @escaping @Sendable () -> Void) throws -> JoinableThread {
        final class Start: Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, stackSize)
        let context = Unmanaged.passRetained(Start(body)).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        let status = pthread_create(&thread, &attributes, { context in
            Unmanaged<Start>.fromOpaque(context).takeRetainedValue().body()
            return nil
        }, context)
        if status == 0, let thread {
            return JoinableThread(handle: UInt(bitPattern: thread))
        }
        #else
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, { context in
            guard let context else { return nil }
            Unmanaged<Start>.fromOpaque(context).takeRetainedValue().body()
            return nil
        }, context)
        if status == 0 { return JoinableThread(handle: thread) }
        #endif
        Unmanaged<Start>.fromOpaque(context).release()
        throw BuckiaError(.io, "The system would not start a thread (\(String(cString: strerror(status)))); too many threads or too little memory.", operation: "start a thread")
    }

    /// Caps glibc's malloc arenas (a memory bound for a process of many threads); elsewhere
    /// nothing.
    package static func limitMallocArenas(_ count: Int32) {
        #if canImport(CLinux)
        _ = buckia_limit_malloc_arenas(count)
        #endif
    }

    /// Opens `path` like `openat`, failing with `ELOOP` if any component is a symbolic link
    /// (Linux's `openat2` with `RESOLVE_NO_SYMLINKS`); -1 with `ENOSYS` where there is no such
    /// call, and the caller walks one folder at a time.
    package static func openWithoutLinks(_ directory: Int32, _ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
        #if canImport(CLinux)
        return buckia_open_no_links(directory, path, flags, mode)
        #else
        errno = ENOSYS
        return -1
        #endif
    }

    /// A file with no name in `folder` (relative to `directory`), through `O_TMPFILE`: -1 with
    /// `EOPNOTSUPP` where the file system or the build has none.
    package static func createUnnamed(_ directory: Int32, _ folder: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
        #if canImport(CLinux)
        return buckia_create_unnamed(directory, folder, flags, mode)
        #else
        errno = EOPNOTSUPP
        return -1
        #endif
    }

    /// Gives the unnamed file `descriptor` the name `name` in `directory`.
    package static func linkUnnamed(_ descriptor: Int32, _ directory: Int32, _ name: String) -> Int32 {
        #if canImport(CLinux)
        return buckia_link_unnamed(descriptor, directory, name)
        #else
        errno = EOPNOTSUPP
        return -1
        #endif
    }

    /// Creates `name` in `folder` already holding an exclusive `flock` (created unnamed, locked,
    /// then linked), dated 1970 when `epoch`; -1 with `errno` where that cannot be done, and
    /// the caller creates the file with `O_EXCL` and locks it an instant later.
    package static func createLocked(_ directory: Int32, _ folder: String, _ name: String, access: Int32, mode: mode_t, epoch: Bool) -> Int32 {
        #if canImport(CLinux)
        return buckia_create_locked_dated(directory, folder, name, access, mode, epoch ? 1 : 0)
        #else
        errno = EOPNOTSUPP
        return -1
        #endif
    }

    /// Creates `name` in the folder `directory` (it must not exist) as a copy-on-write clone of
    /// the open file `source`: the two share their blocks until either is written, so a copy
    /// of any size takes a moment and no space. Linux's `FICLONE` (Btrfs, XFS) into a file
    /// created with mode 0600; Apple's `fclonefileat` (APFS), which gives the clone the
    /// source's mode but not its owner. -1 with `errno` and nothing created where the file
    /// system, the pair of file systems or the build cannot clone (`EOPNOTSUPP`, `EXDEV`,
    /// `ENOTTY`, `EINVAL`), and the caller copies the bytes.
    package static func cloneFile(_ source: Int32, _ directory: Int32, _ name: String) -> Int32 {
        #if canImport(CLinux)
        return buckia_clone_file(source, directory, name)
        #elseif canImport(Darwin)
        return fclonefileat(source, directory, name, UInt32(CLONE_NOFOLLOW | CLONE_NOOWNERCOPY))
        #else
        errno = EOPNOTSUPP
        return -1
        #endif
    }

    /// Whether this build has a clone call (``cloneFile(_:_:_:)``): Linux with the CLinux shims
    /// and Apple platforms; not the portable build on Linux, which has neither.
    #if canImport(CLinux) || canImport(Darwin)
    package static let canClone = true
    #else
    package static let canClone = false
    #endif

    /// The process's file-creation mask, without changing it where the system says it: Linux
    /// states it in `/proc/self/status`. Elsewhere it is set and set back, so a file another
    /// thread creates in that instant gets the mask 022 (the usual one); callers read it once.
    package static func creationMask() -> mode_t {
        let status: String
        do {
            status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        } catch {
            status = ""  // no /proc: asked below instead
        }
        if let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let value = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        {
            return value
        }
        let mask = umask(0o022)
        umask(mask)
        return mask
    }

    /// Flushes every write made so far on the file system holding `descriptor` (Linux's
    /// `syncfs`). Elsewhere the whole system's writes (`sync`), then — on Apple platforms, whose
    /// `sync` does not wait and whose `fsync` leaves data in the drive's cache — a full flush
    /// of the device through `descriptor`.
    package static func syncFileSystem(_ descriptor: Int32) -> Int32 {
        #if canImport(CLinux)
        return buckia_syncfs(descriptor)
        #else
        sync()
        return fullSync(descriptor)
        #endif
    }

    /// Makes `descriptor`'s data and metadata durable: `fsync`, and on Apple platforms
    /// `F_FULLFSYNC`, which also empties the drive's write cache (Apple's `fsync(2)` says its
    /// own does not). A file system that refuses `F_FULLFSYNC` gets the `fsync`.
    package static func fullSync(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
        if fcntl(descriptor, F_FULLFSYNC) == 0 { return 0 }
        #endif
        return fsync(descriptor)
    }

    /// Makes `descriptor`'s data durable, with the metadata needed to read it back: Linux's
    /// `fdatasync`; ``fullSync(_:)`` where there is none.
    package static func dataSync(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
        return fullSync(descriptor)
        #else
        return fdatasync(descriptor)
        #endif
    }

    /// Writes `count` bytes from `offset` to the device and waits (Linux's `sync_file_range`),
    /// so a large file is flushed in pieces; elsewhere ``dataSync(_:)`` of the whole file.
    package static func syncRange(_ descriptor: Int32, _ offset: Int64, _ count: Int64) -> Int32 {
        #if canImport(CLinux)
        return buckia_sync_range(descriptor, offset, count)
        #else
        return dataSync(descriptor)
        #endif
    }

    /// A new IPv4 stream socket, closed on exec; -1 with `errno` on failure.
    package static func streamSocket() -> Int32 {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        if descriptor >= 0 { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        #endif
        if descriptor >= 0 { neverSignalOnWrite(descriptor) }
        return descriptor
    }

    /// Makes a write to `socket` after its peer has gone fail with `EPIPE` instead of raising
    /// SIGPIPE, on platforms where that is a socket option (`SO_NOSIGPIPE` on Apple platforms;
    /// Linux says so per call, in ``send(_:_:_:)``). An accepted socket does not inherit it.
    package static func neverSignalOnWrite(_ socket: Int32) {
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(socket, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// `send(2)` that never raises SIGPIPE: `MSG_NOSIGNAL` where it exists, the socket's
    /// ``neverSignalOnWrite(_:)`` option elsewhere.
    package static func send(_ socket: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
        return Darwin.send(socket, bytes, count, 0)
        #else
        return Foundation.send(socket, bytes, count, Int32(MSG_NOSIGNAL))
        #endif
    }

    /// Asks the kernel to start writing a range to the device and returns at once (a hint);
    /// elsewhere nothing, reported as taken.
    package static func startWriteback(_ descriptor: Int32, _ offset: Int64, _ count: Int64) -> Int32 {
        #if canImport(CLinux)
        return buckia_start_writeback(descriptor, offset, count)
        #else
        return 0
        #endif
    }
}
