import BuckiaCore
import Foundation

/// The locks one sync run holds, so that two runs on this machine never write the same
/// place at once.
///
/// - One lock per *unordered* pair: `sync A B` and `sync B A --mode two-way` exclude each
///   other (each would undo the other's deletes, and each records what it saw).
/// - One lock per side the run writes: the destination of a push, the source of a pull, both
///   sides of a two-way run. A push into `B` and a two-way run between `B` and `C` exclude each
///   other; two pushes from the same source to different destinations do not.
///
/// Locks are `flock`s on files under ``SyncStateStore/folder(environment:)``/`locks`, named by
/// a hash of each place (for local folders their real path), released by ``release()`` or
/// when the process ends, however it ends. A dry run takes none: it writes nothing.
public final class SyncLocks: Sendable {
    private let descriptors: Locked<[Int32]>

    private init(descriptors: [Int32]) {
        self.descriptors = Locked(descriptors)
    }

    deinit { release() }

    /// Takes the pair's lock and the lock of each side written, or none of them.
    ///
    /// - Parameters:
    ///   - writesSource: The run may change the source (pull, two-way).
    ///   - writesDestination: The run may change the destination (push, two-way).
    /// - Throws: ``BuckiaCore/BuckiaError/Code/transient`` naming the place another sync holds;
    ///   `permissionDenied` or `io` when the lock folder cannot be created.
    public static func acquire(
        source: SyncEndpoint, destination: SyncEndpoint, writesSource: Bool, writesDestination: Bool,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> SyncLocks {
        let folder = SyncStateStore.folder(environment: environment).appendingPathComponent("locks", isDirectory: true)
        try LocalFile.createDirectories(folder.path)
        let pair = [source.place, destination.place].sorted()
        var wanted: [(file: String, what: String)] = [
            ("pair-\(name(pair.joined(separator: "\n"))).lock", "Another sync between these two places (in either order) is running")
        ]
        if writesSource { wanted.append(("side-\(name(source.place)).lock", "Another sync that writes \(source.identity) is running")) }
        if writesDestination { wanted.append(("side-\(name(destination.place)).lock", "Another sync that writes \(destination.identity) is running")) }
        var held: [Int32] = []
        do {
            for (file, what) in wanted {
                held.append(try take(folder.appendingPathComponent(file).path, what: what))
            }
        } catch {
            for descriptor in held { close(descriptor) }
            throw error
        }
        return SyncLocks(descriptors: held)
    }

    /// Takes the locks a run in `mode` needs: the pair's, and the side it writes (the
    /// destination of a push, the source of a pull, both in two-way).
    public static func acquire(
        source: SyncEndpoint, destination: SyncEndpoint, mode: SyncMode,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> SyncLocks {
        try acquire(source: source, destination: destination, writesSource: mode != .push, writesDestination: mode != .pull, environment: environment)
    }

    /// Releases every lock now, rather than when the last reference goes.
    public func release() {
        descriptors.withLock { held in
            for descriptor in held { close(descriptor) }
            held = []
        }
    }

    private static func name(_ text: String) -> Substring {
        Hashing.sha256Hex(Data(text.utf8)).prefix(32)
    }

    /// Takes an exclusive `flock` on the file at `path` (created 0600, never through a link),
    /// or fails at once, saying `what` holds it.
    ///
    /// A lock found held is tried again for up to ``handOverPatience``: a run that has just
    /// ended may still hold it for an instant through no fault of its own. `flock` belongs to
    /// the open file, and a child process this one is starting at that moment holds a copy of
    /// every descriptor until its `exec` closes them (`O_CLOEXEC`), so a store closed a moment
    /// ago can still look locked. (The S3 sync conformance suite, run beside tests that start
    /// processes, saw its second sync refused this way.) A run that really holds it is
    /// refused once that time has passed.
    static func take(_ path: String, what: String) throws -> Int32 {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw BuckiaError.posix(errno, operation: "lock sync", path: path) }
        let deadline = ContinuousClock.now + handOverPatience
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                close(descriptor)
                throw BuckiaError(
                    .transient, "\(what); wait for it to finish, then sync again.",
                    operation: "lock sync", path: path)
            }
            usleep(20_000)
        }
        return descriptor
    }

    /// How long a lock found held is tried again before the run is refused (see
    /// ``take(_:what:)``): long enough for a child process to reach its `exec`, short enough
    /// that a refusal still comes at once to a person.
    static let handOverPatience: Duration = .milliseconds(1_500)
}
