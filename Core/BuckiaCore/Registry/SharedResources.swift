import Foundation

/// Names one kind of long-lived object that the providers of a ``SharedResources`` share, and
/// says how to make it the first time one is asked for.
///
/// BuckiaHTTP declares the HTTP transport this way (one thread and one connection pool for
/// every S3, B2 and Bunny provider of a process); a third-party plugin declares its own (an
/// FTP connection pool, a gRPC channel) the same way, without Core knowing of it.
///
/// ```swift
/// enum FTPPoolKey: SharedResourceKey {
///     static func makeResource() throws -> FTPPool { try FTPPool(maximumConnections: 8) }
/// }
/// let pool = try context.resources.resource(FTPPoolKey.self)
/// ```
public protocol SharedResourceKey {
    /// What is shared.
    associatedtype Resource: Sendable
    /// Makes the resource, once per ``SharedResources``, on the first request for it.
    static func makeResource() throws -> Resource
}

/// A shared resource with work to finish before the process may exit: transfers in flight, a
/// thread to join, connections to close.
public protocol ShutdownableResource: Sendable {
    /// Finishes what is in flight, refuses new work, and releases threads and connections.
    /// Called once, by ``SharedResources/shutdown()``.
    func shutdown() async
}

/// A shared resource that runs threads of its own (the HTTP transport's loop, the blocking
/// pool), which its ``ShutdownableResource/shutdown()`` ends.
package protocol ThreadOwningResource: Sendable {
    /// The kernel ids of the threads it started (an entry of `/proc/self/task` each), where the
    /// platform tells them.
    var threadIDs: [Int32] { get }
}

/// The long-lived objects every provider built with the same ``ProviderContext`` shares: one
/// HTTP transport (thread, connection pool, TLS sessions) instead of one per provider, and
/// whatever third-party plugins declare with a ``SharedResourceKey``.
///
/// As swift-nio's event loop groups and AsyncHTTPClient's clients are: made once, passed where
/// providers are built, and shut down explicitly when the work is done.
///
/// ```swift
/// let resources = SharedResources()
/// let provider = try registry.makeProvider(for: configuration, resources: resources)
/// …
/// await resources.shutdown()   // in-flight requests finish; the transport's thread ends
/// ```
///
/// ``process`` is the instance used when none is given: created on first use, it lives as
/// long as the process.
public final class SharedResources: Sendable {
    private struct State {
        var resources: [ObjectIdentifier: any Sendable] = [:]
        /// In the order they were made; shut down in reverse.
        var order: [ObjectIdentifier] = []
        var isShutDown = false
        /// The shutdowns of resources made but not kept (a lost race, or made as shutdown
        /// began), which ``shutdown()`` waits for.
        var discarded: [Task<Void, Never>] = []
        /// The one shutdown every caller waits for.
        var shutdown: Task<Void, Never>?
    }

    private let state = Locked(State())

    /// An empty set: each resource is made on first request.
    public init() {}

    /// The instance providers use when none is given. Shutting it down is allowed (at the end
    /// of a process, say), after which every provider built on it fails its requests.
    public static let process = SharedResources()

    /// The resource `key` names, made now if this is the first request for it.
    ///
    /// - Throws: ``BuckiaError/Code/cancelled`` after ``shutdown()``; whatever
    ///   ``SharedResourceKey/makeResource()`` throws.
    public func resource<Key: SharedResourceKey>(_ key: Key.Type) throws -> Key.Resource {
        let id = ObjectIdentifier(key)
        if let existing = try state.withLock({ state -> Key.Resource? in
            try Self.checkOpen(state, key)
            return state.resources[id] as? Key.Resource
        }) {
            return existing
        }
        // Made outside the lock, so a resource that asks for another one cannot deadlock; when
        // two threads race, the first one stored wins and the other is shut down unused.
        let made = try Key.makeResource()
        let outcome = state.withLock { state -> Result<Key.Resource, BuckiaError> in
            let existing = state.resources[id] as? Key.Resource
            if state.isShutDown || existing != nil {
                if let unused = made as? any ShutdownableResource { state.discarded.append(Task { await unused.shutdown() }) }
                if let existing, !state.isShutDown { return .success(existing) }
                return .failure(Self.shutDownError(key))
            }
            state.resources[id] = made
            state.order.append(id)
            return .success(made)
        }
        return try outcome.get()
    }

    /// Supplies the resource for `key` instead of letting ``SharedResourceKey/makeResource()``
    /// make it: a transport of the application's choosing, a test double.
    ///
    /// - Throws: ``BuckiaError/Code/alreadyExists`` when the resource was already made or
    ///   supplied (providers may hold it), ``BuckiaError/Code/cancelled`` after ``shutdown()``.
    public func provide<Key: SharedResourceKey>(_ key: Key.Type, _ resource: Key.Resource) throws {
        let id = ObjectIdentifier(key)
        try state.withLock { state in
            try Self.checkOpen(state, key)
            guard state.resources[id] == nil else {
                throw BuckiaError(
                    .alreadyExists, "The shared \(String(describing: key)) was already made; supply it before the first provider that uses it.",
                    operation: "provide a shared resource")
            }
            state.resources[id] = resource
            state.order.append(id)
        }
    }

    /// Whether the resource `key` names has been made or supplied (without making it).
    public func contains<Key: SharedResourceKey>(_ key: Key.Type) -> Bool {
        state.withLock { $0.resources[ObjectIdentifier(key)] != nil }
    }

    /// The kernel ids of every thread the resources made so far started, for the test that
    /// ``shutdown()`` ends them all.
    package var threadIDs: [Int32] {
        state.withLock { state in
            state.order.compactMap { state.resources[$0] as? any ThreadOwningResource }.flatMap(\.threadIDs)
        }
    }

    /// Shuts every resource down, newest first, waiting for each; later requests for a
    /// resource throw. Every call waits for the same shutdown to finish.
    public func shutdown() async {
        let task = state.withLock { state -> Task<Void, Never> in
            if let running = state.shutdown { return running }
            state.isShutDown = true
            let kept = state.order.reversed().compactMap { state.resources[$0] as? any ShutdownableResource }
            let task = Task {
                for resource in kept { await resource.shutdown() }
            }
            state.shutdown = task
            return task
        }
        await task.value
        // The shutdowns of resources made and discarded (a lost race) end before this returns.
        while let discarded = state.withLock({ $0.discarded.popLast() }) {
            await discarded.value
        }
    }

    private static func checkOpen<Key>(_ state: State, _ key: Key.Type) throws {
        guard !state.isShutDown else { throw shutDownError(key) }
    }

    private static func shutDownError<Key>(_ key: Key.Type) -> BuckiaError {
        BuckiaError(
            .cancelled, "The shared resources were shut down, so no \(String(describing: key)) is available; build providers with live SharedResources.",
            operation: "use a shared resource")
    }
}
