import Foundation

/// The memory the streamed uploads of one ``SharedResources`` may hold in parts at once.
///
/// An upload from a stream (``StorageProvider/upload(from:remotePath:options:)``) cannot read
/// a part again, so each part it sends is held in memory until its request ends: S3's 5 MiB,
/// B2's 96 MiB, times the parts in flight, times the uploads running at once. Without a bound
/// shared by all of them, a sync of eight large files to B2 would hold 3.75 GiB. Every part of
/// every streamed upload reserves its size here before it is read and returns it when its
/// request ends; when the budget is spent, the next part waits (first come, first served).
/// A part larger than the whole budget is granted the whole budget, so it still goes alone.
///
/// The default is 256 MiB, as one shared resource of a process (``SharedUploadMemory``); an
/// application sets its own before its providers are built:
///
/// ```swift
/// let resources = SharedResources()
/// try resources.provide(SharedUploadMemory.self, UploadMemory(limit: 64 << 20))
/// ```
public final class UploadMemory: Sendable {
    /// The most bytes of parts held at once.
    public let limit: Int

    private struct Waiter {
        let id: UInt64
        let bytes: Int
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var available: Int
        var waiting: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>

    /// A budget of `limit` bytes (at least one).
    public init(limit: Int = 256 << 20) {
        self.limit = max(1, limit)
        state = Locked(State(available: max(1, limit)))
    }

    /// The bytes not reserved now.
    package var available: Int { state.withLock { $0.available } }

    /// The reservations waiting now.
    package var waiting: Int { state.withLock { $0.waiting.count } }

    /// Waits until `bytes` (at most ``limit``) can be held, and reserves them.
    ///
    /// - Returns: The bytes reserved, to hand back to ``release(_:)``.
    /// - Throws: ``BuckiaError/Code/cancelled`` when the task is cancelled while it waits;
    ///   nothing is then reserved.
    public func reserve(_ bytes: Int) async throws -> Int {
        let wanted = min(max(0, bytes), limit)
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Decided under the lock, resumed outside it, and only here for the first two:
                // a waiter is resumed by whoever takes it off the list (a grant, or the
                // cancellation handler), never twice.
                let granted = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if state.waiting.isEmpty, state.available >= wanted {
                        state.available -= wanted
                        return true
                    }
                    state.waiting.append(Waiter(id: id, bytes: wanted, continuation: continuation))
                    return nil
                }
                switch granted {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: Self.cancelled())
                case nil: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index)
            }
            waiter?.continuation.resume(throwing: Self.cancelled())
            // The waiter that left may have been the one holding up those behind it.
            grant()
        }
        return wanted
    }

    /// Hands back bytes ``reserve(_:)`` returned, and lets the parts waiting for them go.
    public func release(_ bytes: Int) {
        state.withLock { $0.available = min(limit, $0.available + max(0, bytes)) }
        grant()
    }

    /// Resumes waiters from the front while the budget covers them.
    private func grant() {
        let ready = state.withLock { state -> [Waiter] in
            var ready: [Waiter] = []
            while let first = state.waiting.first, first.bytes <= state.available {
                state.available -= first.bytes
                ready.append(state.waiting.removeFirst())
            }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    private static func cancelled() -> BuckiaError {
        BuckiaError(.cancelled, "The upload was cancelled while it waited for memory for its next part; nothing was stored.", operation: "upload")
    }
}

/// The ``UploadMemory`` budget of a ``SharedResources``: 256 MiB unless the application
/// provides its own.
public enum SharedUploadMemory: SharedResourceKey {
    /// A budget of 256 MiB.
    public static func makeResource() -> UploadMemory { UploadMemory() }
}
