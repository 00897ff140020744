/// Folders held open across one batch of writes, so a sync that writes a thousand files into
/// a folder looks the folder up once rather than a thousand times.
///
/// A writer that finds a batch here (``current``, a task-local the sync engine sets around
/// each batch of copies) reuses the handle it opened for a folder, and forgets it when a
/// write there fails because the folder is gone (`ENOENT`: removed, or pruned by a delete)
/// before looking the folder up again. Nothing is followed that a fresh lookup would not
/// follow: the handle was opened with no link on the way. What a held handle changes is the
/// moment the folder was looked up: a folder renamed while the batch runs still receives the
/// batch's writes, as if they had come just before the rename, which is the order a reader
/// cannot tell apart from it. Handles live no longer than the batch (a few thousand files), and
/// at most ``limit`` at a time.
package final class FolderHandles: Sendable {
    /// The batch the current task writes for, if any.
    @TaskLocal package static var current: FolderHandles?

    /// Folders held at once; past it the oldest are let go (a sync writes folder by folder).
    package static let limit = 32

    private let state = Locked(State())

    private struct State {
        var handles: [String: DirectoryHandle] = [:]
        var order: [String] = []
    }

    package init() {}

    /// The handle held for the folder at `path`, or the one `open` makes, held from then on.
    package func folder(_ path: String, open: () throws -> DirectoryHandle?) rethrows -> DirectoryHandle? {
        if let held = state.withLock({ $0.handles[path] }) { return held }
        guard let opened = try open() else { return nil }
        state.withLock { state in
            if state.handles.updateValue(opened, forKey: path) == nil { state.order.append(path) }
            while state.order.count > Self.limit { state.handles[state.order.removeFirst()] = nil }
        }
        return opened
    }

    /// Lets go of the folder at `path` and every folder under it.
    package func forget(_ path: String) {
        state.withLock { state in
            let under = path.hasSuffix("/") ? path : path + "/"
            let gone = state.order.filter { $0 == path || $0.hasPrefix(under) }
            guard !gone.isEmpty else { return }
            for held in gone { state.handles[held] = nil }
            let held = state.handles
            state.order.removeAll { held[$0] == nil }
        }
    }

    /// How many folders are held, for tests.
    package var count: Int { state.withLock { $0.handles.count } }
}
