import Foundation

/// What a token says about itself: when it expires and what it opens.
public struct TokenMetadata: Sendable, Hashable {
    /// When the token stops working.
    public var expiresAt: Date
    /// What it allows.
    public var permissions: StoragePermissions
    /// The key prefix it is limited to, if any.
    public var pathPrefix: String?
    /// The scheme's other facts (countries, an address binding, …), by name.
    public var attributes: [String: String]

    public init(expiresAt: Date, permissions: StoragePermissions, pathPrefix: String?, attributes: [String: String] = [:]) {
        self.expiresAt = expiresAt
        self.permissions = permissions
        self.pathPrefix = pathPrefix
        self.attributes = attributes
    }
}

/// Makes and checks a backend's access tokens offline, with the key that signs them — the
/// seed's `TokenFactory`. A provider's ``StorageProvider/generateAccessToken(options:)`` may ask
/// the backend; a factory never does, so a server can check a token a client presents without
/// a request.
public protocol TokenFactory: Sendable {
    /// A token for `options` (its expiry, permissions and path prefix).
    func generateToken(options: AccessTokenOptions) throws -> AccessToken

    /// Whether `token` is valid now: signed with this factory's key, not expired, in scope.
    ///
    /// - Throws: When `token` is not a token of this kind at all (malformed).
    func validateToken(_ token: String) throws -> Bool

    /// What `token` says about itself, without checking its signature.
    func parseToken(_ token: String) throws -> TokenMetadata
}
