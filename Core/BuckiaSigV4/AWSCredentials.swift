import BuckiaCore
import Foundation

/// An AWS access key: the id, the secret, and a session token for temporary credentials.
///
/// The secret and token are ``BuckiaCore/Secret``s and never print.
public struct AWSCredentials: Hashable, Sendable, CustomStringConvertible {
    /// The access key id (`AKIA…`, `ASIA…`); not secret, but it identifies the account.
    public var accessKeyId: String
    /// The secret access key.
    public var secretAccessKey: Secret
    /// The session token of temporary credentials (STS, SSO), if any.
    public var sessionToken: Secret?

    /// Creates credentials.
    public init(accessKeyId: String, secretAccessKey: Secret, sessionToken: Secret? = nil) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String {
        "AWSCredentials(accessKeyId: \(accessKeyId), secretAccessKey: <REDACTED>\(sessionToken == nil ? "" : ", sessionToken: <REDACTED>"))"
    }
}

/// Where a client gets the credentials it signs each request with: fixed ones, or temporary
/// ones a source renews before they expire (STS's `AssumeRoleWithWebIdentity` from a login).
public protocol AWSCredentialSource: Sendable {
    /// Credentials to sign the next request with, valid for some minutes yet.
    ///
    /// - Throws: why none can be had (a login that ended, an STS that refused); a source
    ///   throws ``BuckiaCore/BuckiaError`` codes a user can act on.
    func credentials() async throws -> AWSCredentials
}
