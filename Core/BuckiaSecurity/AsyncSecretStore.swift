import BuckiaCore
import Foundation

/// A ``SecretStore`` for async code: each call runs on a ``BuckiaCore/BlockingPool``, so an
/// actor or a request handler never holds one of the cooperative pool's threads while a store
/// waits for its lock (``FileSecretStore``'s `flock`), derives a key (its passphrase's scrypt)
/// or asks the Keychain. A store that does not block (``SecretStore/callsBlock`` is false, as
/// for ``InMemorySecretStore``) is called directly.
///
/// ```swift
/// let secrets = AsyncSecretStore(FileSecretStore.standard())
/// let token = try await secrets.load("oauth/work/access")
/// ```
public struct AsyncSecretStore: Sendable {
    /// The store the calls go to.
    public let store: any SecretStore
    private let pool: BlockingPool?

    /// Calls `store` on `pool`'s threads, or (nil) on ``BuckiaCore/SharedResources/process``'s.
    public init(_ store: any SecretStore, pool: BlockingPool? = nil) {
        self.store = store
        self.pool = pool
    }

    /// ``SecretStore/save(_:for:)``, off the cooperative pool.
    nonisolated(nonsending) public func save(_ secret: StoredSecret, for context: String) async throws {
        try await call("save a secret") { [store] in try store.save(secret, for: context) }
    }

    /// ``SecretStore/load(_:)``, off the cooperative pool.
    nonisolated(nonsending) public func load(_ context: String) async throws -> StoredSecret? {
        try await call("load a secret") { [store] in try store.load(context) }
    }

    /// ``SecretStore/delete(_:)``, off the cooperative pool.
    @discardableResult
    nonisolated(nonsending) public func delete(_ context: String) async throws -> Bool {
        try await call("delete a secret") { [store] in try store.delete(context) }
    }

    /// ``SecretStore/entries()``, off the cooperative pool.
    nonisolated(nonsending) public func entries() async throws -> [SecretEntry] {
        try await call("list secrets") { [store] in try store.entries() }
    }

    /// ``SecretStore/saveIfAbsent(_:for:)``, off the cooperative pool.
    nonisolated(nonsending) public func saveIfAbsent(_ secret: StoredSecret, for context: String) async throws -> Bool {
        try await call("save a secret") { [store] in try store.saveIfAbsent(secret, for: context) }
    }

    /// Runs several calls on the store as one job: a task cancelled before the job starts
    /// changes nothing, and once it starts every step runs, so a save of related secrets (a
    /// refresh token and the access token it brought) is never cut in two by a cancellation.
    nonisolated(nonsending) public func perform<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (any SecretStore) throws -> T) async throws -> T {
        try await call(operation) { [store] in try body(store) }
    }

    nonisolated(nonsending) private func call<T: Sendable>(_ operation: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        guard store.callsBlock else { return try body() }
        return try await BlockingWork.run(operation, on: pool, body)
    }
}
