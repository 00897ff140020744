import BuckiaCore
import Foundation

/// A grant a backend cannot express exactly, and why.
public struct InexpressibleGrant: Sendable, Hashable, CustomStringConvertible {
    /// The grant.
    public var grant: StorageGrant
    /// Why the backend cannot hold it without widening it.
    public var reason: String

    /// Creates one.
    public init(_ grant: StorageGrant, _ reason: String) {
        self.grant = grant
        self.reason = reason
    }

    public var description: String { "\(grant): \(reason)" }
}

/// Credentials a backend enforces itself, made for a set of grants: for apps that let a user
/// reach the bucket directly rather than through a server that checks Buckia tokens.
///
/// A factory never widens a grant to make it fit. It says which grants it cannot express
/// (``inexpressible(_:)``), and ``credentials(for:userId:expiry:)`` throws for them before
/// it asks the backend for anything. Unlike ``BuckiaCore/TokenFactory``, which signs offline, a
/// factory may call the backend (B2 creates keys), so issuing is `async`.
public protocol ScopedCredentialFactory: Sendable {
    /// What the factory's credentials are (a B2 key, a presigned URL, a CDN token).
    associatedtype Credential: Sendable

    /// The backend's name, for messages.
    var backendName: String { get }

    /// The grants this backend cannot express exactly, each with why; empty when it can
    /// express them all.
    func inexpressible(_ grants: StorageGrants) -> [InexpressibleGrant]

    /// Credentials for `grants`, for `userId`, valid for `expiry`.
    ///
    /// - Throws: ``BuckiaError/Code/unsupported`` naming every inexpressible grant, before any
    ///   request; ``BuckiaError/Code/invalidPath`` for a grant whose prefix breaks the key rules.
    func credentials(for grants: StorageGrants, userId: String, expiry: Duration) async throws -> [Credential]
}

extension ScopedCredentialFactory {
    /// Throws unless every grant is valid and expressible here.
    public func checkExpressible(_ grants: StorageGrants) throws {
        try grants.validate()
        let refused = inexpressible(grants)
        guard refused.isEmpty else {
            throw BuckiaError(
                .unsupported,
                "\(backendName) cannot express \(refused.count == 1 ? "this grant" : "these grants") without widening: "
                    + refused.map(\.description).joined(separator: "; ") + ". Issue a Buckia user token for them instead, checked by a server.",
                operation: "scoped credentials")
        }
    }
}
