import BuckiaCore
import Foundation

/// The seed's `TokenManager`: tokens saved, read and deleted by context with their expiry, and
/// user storage tokens issued with signing keys kept in the same store.
///
/// It works over any ``SecretStore``. There is no hidden global: an app that wants one asks for
/// ``shared`` (the user's ``FileSecretStore/standard(environment:)``), and everything else
/// passes its manager around.
///
/// ```swift
/// let tokens = TokenManager(store: InMemorySecretStore())
/// try tokens.saveToken("eyJ…", for: "user-u1", expiresAt: Date().addingTimeInterval(86_400))
/// let key = try tokens.createSigningKey(keyId: "2026-11")
/// let sync = try tokens.generateUserStorageToken(
///     userId: "u1",
///     grants: [StoragePermissions.readOnly.restrictToPath("u1/"), StoragePermissions.write.restrictToPath("u1/inbound/")],
///     expiry: .seconds(86_400), keyId: key.keyId)
/// ```
public final class TokenManager: Sendable {
    /// The user's manager, over ``FileSecretStore/standard(environment:)``. Nothing is read or
    /// created until it is first used.
    public static let shared = TokenManager(store: FileSecretStore.standard())

    /// Where tokens and keys are kept.
    public let store: any SecretStore
    private let clock: @Sendable () -> Date

    /// The context prefix under which signing keys are saved (`buckia.signing-key/<kid>`).
    public static let signingKeyPrefix = "buckia.signing-key/"

    /// Creates a manager over `store`; `clock` is the time source (injected by tests).
    public init(store: any SecretStore, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.clock = clock
    }

    // MARK: Tokens by context

    /// Saves `token` under `context`, with when it expires and facts about it that are not secret.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a context under
    ///   ``signingKeyPrefix``: what is saved there verifies tokens, so only
    ///   ``createSigningKey(_:keyId:)`` writes it.
    public func saveToken(_ token: Secret, for context: String, expiresAt: Date? = nil, metadata: [String: String] = [:]) throws {
        try Self.refuseReserved(context)
        try store.save(StoredSecret(value: token, expiresAt: expiresAt, savedAt: clock(), metadata: metadata), for: context)
    }

    private static func refuseReserved(_ context: String) throws {
        guard !context.hasPrefix(signingKeyPrefix) else {
            throw BuckiaError(
                .invalidConfiguration, "The context \(context) is reserved for signing keys; create one with createSigningKey (buckia token keygen).")
        }
    }

    /// Saves `token` under `context`.
    public func saveToken(_ token: String, for context: String, expiresAt: Date? = nil, metadata: [String: String] = [:]) throws {
        try saveToken(Secret(token), for: context, expiresAt: expiresAt, metadata: metadata)
    }

    /// The token under `context`, or nil when there is none or it has expired: an expired token
    /// opens nothing, so it is never handed out.
    public func getToken(for context: String) throws -> Secret? {
        guard let stored = try store.load(context), !stored.isExpired(at: clock()) else { return nil }
        return stored.value
    }

    /// The token under `context` with its dates and metadata, expired or not.
    public func storedToken(for context: String) throws -> StoredSecret? {
        try store.load(context)
    }

    /// Deletes the token under `context`; deleting one that is not there is not an error.
    /// Signing keys are deleted with ``deleteSigningKey(keyId:)``.
    public func deleteToken(for context: String) throws {
        try Self.refuseReserved(context)
        try store.delete(context)
    }

    /// Deletes the signing key `keyId`: every token it signed stops verifying.
    ///
    /// - Returns: Whether there was such a key.
    @discardableResult
    public func deleteSigningKey(keyId: String) throws -> Bool {
        try UserTokenKeyID.check(keyId)
        return try store.delete(Self.signingKeyPrefix + keyId)
    }

    // MARK: User storage tokens

    /// Creates a signing key and saves it under `buckia.signing-key/<keyId>`.
    ///
    /// - Throws: ``BuckiaError/Code/alreadyExists`` when a key with that id is saved already:
    ///   replacing it would silently invalidate every token it signed.
    @discardableResult
    public func createSigningKey(_ algorithm: UserTokenAlgorithm = .edDSA, keyId: String) throws -> UserTokenSigningKey {
        try UserTokenKeyID.check(keyId)
        let key = try UserTokenSigningKey.generate(algorithm, keyId: keyId)
        // One step: two keygens racing for one id cannot both believe they won.
        guard try store.saveIfAbsent(
            StoredSecret(value: key.encoded, savedAt: clock(), metadata: ["algorithm": algorithm.rawValue]), for: Self.signingKeyPrefix + keyId)
        else {
            throw BuckiaError(
                .alreadyExists, "A signing key with the id \(keyId) is saved already; choose another id to rotate keys (tokens name their key by id).")
        }
        return key
    }

    /// The saved signing key `keyId`, or nil.
    public func signingKey(keyId: String) throws -> UserTokenSigningKey? {
        try UserTokenKeyID.check(keyId)
        guard let stored = try store.load(Self.signingKeyPrefix + keyId) else { return nil }
        guard let name = stored.metadata["algorithm"], let algorithm = UserTokenAlgorithm(rawValue: name) else {
            throw BuckiaError(.corrupt, "The saved signing key \(keyId) does not say its algorithm; delete it and create a new one.")
        }
        return try UserTokenSigningKey(keyId: keyId, algorithm: algorithm, encoded: stored.value)
    }

    /// Every saved signing key, by id. An entry under the prefix whose name is not a key id
    /// (only another program could have written it) is not a key, and is left out.
    public func signingKeys() throws -> [UserTokenSigningKey] {
        try store.entries().compactMap { entry in
            guard let keyId = entry.context.utf8Dropping(prefix: Self.signingKeyPrefix) else { return nil }
            do {
                try UserTokenKeyID.check(keyId)
            } catch {
                return nil
            }
            return try signingKey(keyId: keyId)
        }
    }

    /// The saved signing key `keyId`, or the only saved key when `keyId` is nil: the choice every
    /// issuer makes (user tokens here, the gateway's temporary credentials).
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when `keyId` is not saved;
    ///   ``BuckiaError/Code/invalidConfiguration`` when it is nil and there is not exactly one key.
    public func signingKey(selecting keyId: String?) throws -> UserTokenSigningKey {
        if let keyId {
            guard let found = try signingKey(keyId: keyId) else {
                throw BuckiaError(.notFound, "No signing key \(keyId) is saved; create one first (buckia token keygen --key-id \(keyId)).")
            }
            return found
        }
        let keys = try signingKeys()
        guard keys.count == 1, let only = keys.first else {
            throw BuckiaError(
                .invalidConfiguration,
                keys.isEmpty ? "No signing key is saved; create one first (buckia token keygen --key-id ID)." : "\(keys.count) signing keys are saved (\(keys.map(\.keyId).sorted().joined(separator: ", "))); name the one to use (buckia token issue --key-id ID, buckia serve s3 --token-key ID).")
        }
        return only
    }

    /// The seed's `generateUserStorageToken`: a token for `userId` with `grants`, valid for
    /// `expiry`, signed with the saved key `keyId` (the only saved key when nil).
    public func generateUserStorageToken(
        userId: String, grants: StorageGrants, expiry: Duration, keyId: String? = nil, audience: String = "buckia"
    ) throws -> IssuedUserToken {
        try UserTokenIssuer(key: try signingKey(selecting: keyId), audience: audience, clock: clock).issue(userId: userId, grants: grants, lifetime: expiry)
    }

    /// A verifier that accepts tokens signed by any saved key.
    public func verifier(audience: String = "buckia", leeway: Duration = .seconds(60)) throws -> UserTokenVerifier {
        try UserTokenVerifier(keys: try signingKeys().map { try $0.verificationKey() }, audience: audience, leeway: leeway, clock: clock)
    }
}
