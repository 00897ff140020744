import BuckiaCore
import BuckiaSecurity
import BuckiaSigV4
import Foundation

/// S3 credentials as AWS STS returns them — an access key id, a secret access key and a session
/// token — scoped by Buckia grants and enforced by `buckia serve s3`.
///
/// The session token is a Buckia user token (a JWT) whose grants are the credential's scope; the
/// access key id names the token (`BK` and its `jti`); the secret is HMAC-SHA256 of the token id
/// under the gateway's derivation key. The gateway keeps no per-user state: from the token a
/// request carries it checks the token, rebuilds the secret and checks the request's signature.
/// Every S3 client signs with them unchanged (`x-amz-security-token`).
public struct TemporaryS3Credentials: Sendable, Hashable, CustomStringConvertible {
    /// The access key id (`BK…`).
    public var accessKeyId: String
    /// The secret access key.
    public var secretAccessKey: Secret
    /// The session token: the signed grants.
    public var sessionToken: Secret
    /// When they stop working.
    public var expiresAt: Date

    /// As ``BuckiaSigV4/AWSCredentials``, to sign with.
    public var awsCredentials: AWSCredentials {
        AWSCredentials(accessKeyId: accessKeyId, secretAccessKey: secretAccessKey, sessionToken: sessionToken)
    }

    public var description: String { "TemporaryS3Credentials(\(accessKeyId), expires \(expiresAt.formatted(.iso8601)), <REDACTED>)" }
}

/// The gateway's keys: the one that signs session tokens (and its verification keys, old ones
/// included while they rotate out) and the one secrets are derived with.
public struct GatewayKeys: Sendable {
    /// Signs new session tokens.
    public var signingKey: UserTokenSigningKey
    /// Checks session tokens: the signing key's and any being rotated out.
    public var verificationKeys: [UserTokenVerificationKey]
    /// Derives each credential's secret from its token id; at least 32 bytes.
    public var derivationKey: Secret
    /// The audience session tokens name, so a token meant for something else is refused here.
    public static let audience = "buckia-s3-gateway"

    /// Creates the key set.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a derivation key under 32 bytes.
    public init(signingKey: UserTokenSigningKey, derivationKey: Secret, previousKeys: [UserTokenVerificationKey] = []) throws {
        guard derivationKey.exposedValue.utf8.count >= 32 else {
            throw BuckiaError(.invalidConfiguration, "The gateway's derivation key must be at least 32 bytes.")
        }
        self.signingKey = signingKey
        self.verificationKeys = [try signingKey.verificationKey()] + previousKeys
        self.derivationKey = derivationKey
    }

    /// The secret for the credential whose token id is `tokenId`.
    func secret(forTokenId tokenId: String) -> Secret {
        Secret(HMAC.sha256(key: Array(derivationKey.exposedValue.utf8), message: Data("buckia-s3-secret/v1/\(tokenId)".utf8)).hex)
    }

    static func accessKeyId(forTokenId tokenId: String) -> String { "BK" + tokenId }

    /// Temporary credentials for `userId` with `grants`, valid for `lifetime` (at most 12 hours,
    /// STS's longest session).
    public func issue(userId: String, grants: StorageGrants, lifetime: Duration, clock: @escaping @Sendable () -> Date = { Date() }) throws -> TemporaryS3Credentials {
        guard lifetime <= .seconds(43_200) else {
            throw BuckiaError(.invalidConfiguration, "Temporary S3 credentials last at most 12 hours; \(lifetime) was asked for.")
        }
        let issued = try UserTokenIssuer(key: signingKey, audience: Self.audience, clock: clock).issue(userId: userId, grants: grants, lifetime: lifetime)
        return TemporaryS3Credentials(
            accessKeyId: Self.accessKeyId(forTokenId: issued.claims.tokenId), secretAccessKey: secret(forTokenId: issued.claims.tokenId),
            sessionToken: issued.token, expiresAt: issued.claims.expiresAt)
    }
}

/// Who a verified request comes from, and what it may do.
public struct GatewayPrincipal: Sendable, Hashable {
    /// The user (a session token's `sub`), or the static key's id.
    public var name: String
    /// What it may do.
    public var grants: StorageGrants
}

/// Checks requests for the gateway: a static key pair with full access, or temporary
/// credentials whose session token carries the grants.
public struct GatewayAuthenticator: Sendable {
    private let keys: GatewayKeys?
    private let staticKeys: [String: Secret]
    private let clock: @Sendable () -> Date

    /// An authenticator over `keys` (for temporary credentials) and static key pairs (id → secret).
    public init(keys: GatewayKeys?, staticKeys: [String: Secret] = [:], clock: @escaping @Sendable () -> Date = { Date() }) {
        self.keys = keys
        self.staticKeys = staticKeys
        self.clock = clock
    }

    /// The keys temporary credentials are issued and checked with, when there are any.
    package var issuingKeys: GatewayKeys? { keys }

    /// The principal a request is signed by.
    ///
    /// - Throws: ``BuckiaSigV4/SigV4Refusal`` with the S3 error code to answer.
    public func authenticate(_ request: SigV4Request) throws(SigV4Refusal) -> GatewayPrincipal {
        try authenticateRequest(request).principal
    }

    /// The principal, what its signature claims, and the secret it was checked with (which a
    /// streamed body's chunk signatures are checked with too).
    package func authenticateRequest(_ request: SigV4Request) throws(SigV4Refusal) -> GatewayAuthentication {
        let authorization = try SigV4Verifier.parse(request)
        let now = clock()
        let (principal, secret) = try resolve(accessKeyId: authorization.accessKeyId, sessionToken: authorization.sessionToken, now: now)
        try SigV4Verifier.verify(request, authorization, secret: secret, now: now)
        return GatewayAuthentication(principal: principal, authorization: authorization, secret: secret)
    }

    /// The principal whose credential signed a browser form's `policy` (POST Object): the
    /// signature is the policy's HMAC with the credential's signing key, as SigV4 defines it
    /// for forms. The policy's own expiration bounds its life; the date must be a valid one
    /// of the credential's day.
    ///
    /// - Throws: ``BuckiaSigV4/SigV4Refusal`` with the S3 error code to answer.
    package func authenticatePolicy(
        _ policy: String, credential: String, date dateText: String, signature: String, sessionToken: String?
    ) throws(SigV4Refusal) -> GatewayPrincipal {
        let scope = credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard scope.count == 5, !scope[0].isEmpty, scope[0].count <= 128, scope[1].count == 8, !scope[2].isEmpty, scope[3] == "s3", scope[4] == "aws4_request" else {
            throw SigV4Refusal("InvalidArgument", "x-amz-credential must be ACCESS_KEY/yyyyMMdd/REGION/s3/aws4_request.")
        }
        guard let date = SigV4Verifier.parseDate(dateText), dateText.hasPrefix(scope[1]) else {
            throw SigV4Refusal("InvalidArgument", "x-amz-date must be yyyyMMdd'T'HHmmss'Z' on the credential's day.")
        }
        let (principal, secret) = try resolve(accessKeyId: scope[0], sessionToken: sessionToken, now: clock())
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyId: scope[0], secretAccessKey: secret), region: scope[2], service: "s3")
        let expected = signer.signature(stringToSign: policy, date: date)
        guard HMAC.constantTimeEquals(Array(expected.utf8), Array(signature.lowercased().utf8)) else {
            throw SigV4Refusal("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
        }
        return principal
    }

    /// As ``authenticatePolicy(_:credential:date:signature:sessionToken:)`` for a form signed
    /// the older way (Signature Version 2, what boto3's `generate_presigned_post` makes by
    /// default): `signature` is the base64 HMAC-SHA1 of the policy with the secret itself.
    package func authenticatePolicyV2(_ policy: String, accessKeyId: String, signature: String, sessionToken: String?) throws(SigV4Refusal) -> GatewayPrincipal {
        let (principal, secret) = try resolve(accessKeyId: accessKeyId, sessionToken: sessionToken, now: clock())
        let expected: Digest
        do {
            expected = try HMAC.authenticationCode(.sha1, key: Array(secret.exposedValue.utf8), message: Array(policy.utf8))
        } catch {
            throw SigV4Refusal("InternalError", "HMAC-SHA1 is not available here.", status: 500)
        }
        guard HMAC.constantTimeEquals(Array(expected.base64.utf8), Array(signature.utf8)) else {
            throw SigV4Refusal("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
        }
        return principal
    }

    /// Who `accessKeyId` (with `sessionToken` for a temporary credential) is, and its secret.
    private func resolve(accessKeyId: String, sessionToken: String?, now: Date) throws(SigV4Refusal) -> (GatewayPrincipal, Secret) {
        if let token = sessionToken {
            guard let keys else { throw SigV4Refusal("InvalidToken", "This gateway issues no temporary credentials.") }
            let claims: UserTokenClaims
            do {
                let verifier = try UserTokenVerifier(keys: keys.verificationKeys, audience: GatewayKeys.audience, leeway: .seconds(60), clock: { now })
                claims = try verifier.verify(token)
            } catch let refusal as UserTokenRefusal {
                if refusal.reason == .expired { throw SigV4Refusal("ExpiredToken", "The provided token has expired.") }
                throw SigV4Refusal("InvalidToken", "The provided token is malformed or otherwise invalid (\(refusal.reason.rawValue)).")
            } catch {
                throw SigV4Refusal("InvalidToken", "The provided token cannot be checked.")
            }
            guard accessKeyId == GatewayKeys.accessKeyId(forTokenId: claims.tokenId) else {
                throw SigV4Refusal("InvalidAccessKeyId", "The access key id does not belong to the session token sent with it.")
            }
            return (GatewayPrincipal(name: claims.subject, grants: claims.grants), keys.secret(forTokenId: claims.tokenId))
        }
        guard let secret = staticKeys[accessKeyId] else {
            throw SigV4Refusal("InvalidAccessKeyId", "The AWS access key id you provided does not exist in our records.")
        }
        return (GatewayPrincipal(name: accessKeyId, grants: .everything), secret)
    }
}

/// A verified request: who, what the signature claims, and the secret that checked it.
package struct GatewayAuthentication: Sendable {
    package var principal: GatewayPrincipal
    package var authorization: SigV4Authorization
    package var secret: Secret
}

extension GatewayKeys {
    /// The secret-store context of the gateway's derivation key.
    public static let derivationKeyContext = "buckia.gateway/derivation-key"

    /// The gateway's keys as kept in `tokens`' store: the signing key `keyId` (the only saved one
    /// when nil) and the derivation key, created on first use when `create` is set.
    ///
    /// `buckia token issue --s3` and `buckia serve s3` read the same keys, so credentials one
    /// issues the other accepts.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/notFound`` when a key is missing and `create` is false.
    public static func stored(in tokens: TokenManager, keyId: String? = nil, create: Bool) throws -> GatewayKeys {
        let signingKey = try tokens.signingKey(selecting: keyId)
        if create {
            let fresh = StoredSecret(value: Secret(Data(try SecureRandom.bytes(count: 32)).base64EncodedString()), savedAt: Date())
            _ = try tokens.store.saveIfAbsent(fresh, for: derivationKeyContext)
        }
        guard let derivation = try tokens.store.load(derivationKeyContext)?.value else {
            throw BuckiaError(.notFound, "The gateway's derivation key is not saved; issue temporary credentials once (buckia token issue --s3) to create it.")
        }
        let previous = try tokens.signingKeys().filter { $0.keyId != signingKey.keyId }.map { try $0.verificationKey() }
        return try GatewayKeys(signingKey: signingKey, derivationKey: derivation, previousKeys: previous)
    }
}

extension TemporaryS3Credentials {
    /// The credentials as the AWS CLI's and SDKs' `credential_process` reads them (version 1), so
    /// `credential_process = buckia token issue … --s3` in `~/.aws/config` signs every request with them.
    public func credentialProcessJSON() throws -> String {
        let object: [String: Any] = [
            "Version": 1, "AccessKeyId": accessKeyId, "SecretAccessKey": secretAccessKey.exposedValue, "SessionToken": sessionToken.exposedValue,
            "Expiration": expiresAt.formatted(.iso8601),
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
