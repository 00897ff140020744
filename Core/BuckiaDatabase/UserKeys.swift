import BuckiaCore
import BuckiaSecurity
import Foundation

/// A user's two keys for sharing changes: the Ed25519 key their diffs are signed with
/// (``DiffSignature``) and the X25519 key diffs to them are sealed to (``SealedDiff``). Both stay
/// in the user's secret store; their public halves are published together as
/// `keys/<user>.jwk`, where every user can read them and only their owner can write them.
public struct UserKeys: Sendable {
    /// The key this user's diffs are signed with.
    public let signing: UserTokenSigningKey
    /// The key diffs sent to this user are sealed to.
    public let sealing: DiffRecipientPrivateKey

    /// The secret-store context prefix of sealing keys (signing keys are ``BuckiaSecurity/TokenManager``'s).
    public static let sealingKeyPrefix = "buckia.recipient-key/"

    /// The key ids of `user`'s keys: `<user>.sign` and `<user>.seal`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a user id that cannot
    ///   name a key (1 to 59 of letters, digits, `.`, `_` and `-`).
    public static func keyIds(of user: String) throws -> (signing: String, sealing: String) {
        guard (1...59).contains(user.utf8.count), user != ".", user != "..",
              user.utf8.allSatisfy({ byte in
                  (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                      || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                      || byte == UInt8(ascii: "-")
              })
        else {
            throw BuckiaError(
                .invalidConfiguration, "The user id \(user.debugDescription) cannot name a key: use 1 to 59 letters, digits, '.', '_' or '-'.", path: user)
        }
        return ("\(user).sign", "\(user).seal")
    }

    /// `user`'s keys in `tokens`' store; with `create`, the missing ones are made (a key that
    /// exists is never replaced: diffs signed or sealed with it would stop opening).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/notFound`` without `create` when a key is missing.
    public static func stored(for user: String, in tokens: TokenManager, create: Bool) throws -> UserKeys {
        let ids = try keyIds(of: user)
        let signing: UserTokenSigningKey
        if let found = try tokens.signingKey(keyId: ids.signing) {
            signing = found
        } else if create {
            signing = try tokens.createSigningKey(keyId: ids.signing)
        } else {
            throw BuckiaError(.notFound, "\(user) has no signing key in this secret store; run buckia user init for \(user) first.", path: ids.signing)
        }
        let context = sealingKeyPrefix + ids.sealing
        if create, try tokens.store.load(context) == nil {
            let fresh = try DiffRecipientPrivateKey.generate(keyId: ids.sealing)
            // Two inits racing keep the first key: the second reads it back below.
            _ = try tokens.store.saveIfAbsent(StoredSecret(value: fresh.encoded, savedAt: Date(), metadata: ["user": user]), for: context)
        }
        guard let stored = try tokens.store.load(context) else {
            throw BuckiaError(.notFound, "\(user) has no sealing key in this secret store; run buckia user init for \(user) first.", path: ids.sealing)
        }
        return UserKeys(signing: signing, sealing: try DiffRecipientPrivateKey(keyId: ids.sealing, encoded: stored.value))
    }

    /// Publishes the public halves as `user`'s key set (`<prefix><user>.jwk`) on `provider`.
    @discardableResult
    public func publish(for user: String, to provider: any StorageProvider, prefix: String = "keys/") async throws -> ObjectKey {
        try await SenderKeys.publish([try signing.verificationKey()], recipientKeys: [try sealing.publicKey()], for: user, to: provider, prefix: prefix)
    }
}
