import BuckiaCore
import BuckiaSecurity
import BuckiaSQLite
import Foundation

/// A diff file's signature: its sender's Ed25519 signature over the content hash, so the
/// recipient knows the diff comes from the user it names (Docs/Database.md, "Signed diffs").
///
/// The file holds it in the table `buckia_signature (key_id TEXT NOT NULL, signature TEXT NOT
/// NULL)`, one row: the id of the sender's key (as in the key's JWK) and the base64url
/// signature (RFC 4648 §5, no padding) of the UTF-8 bytes
/// `buckia-diff-signature/v1\n<key_id>\n<payload_sha256>`. The payload hash covers the format
/// version, KSUID, sender, creation time and every table and row, so the signature covers them
/// too; a writer in any language needs SQLite and an Ed25519 library.
public struct DiffSignature: Hashable, Sendable {
    /// The id of the key that signed.
    public var keyId: String
    /// The 64-byte Ed25519 signature.
    public var bytes: [UInt8]

    /// The bytes a signature is over.
    package static func message(keyId: String, payloadSHA256: String) -> [UInt8] {
        Array("buckia-diff-signature/v1\n\(keyId)\n\(payloadSHA256)".utf8)
    }

    package static let table = "buckia_signature"
    package static let schema = "CREATE TABLE buckia_signature (key_id TEXT NOT NULL, signature TEXT NOT NULL)"

    /// Signs `payloadSHA256` with `key` (an EdDSA user key).
    package static func sign(payloadSHA256: String, with key: UserTokenSigningKey) throws -> DiffSignature {
        guard key.algorithm == .edDSA else {
            throw BuckiaError(
                .invalidConfiguration, "A diff is signed with an Ed25519 (EdDSA) key, which its recipients can check; \(key.keyId) is \(key.algorithm.rawValue).",
                operation: "create diff")
        }
        return DiffSignature(keyId: key.keyId, bytes: try key.sign(message(keyId: key.keyId, payloadSHA256: payloadSHA256)))
    }

    /// The signature in the file, nil when it has none.
    ///
    /// - Throws: ``DiffProblem/malformedSignature(_:)`` for a table with other than one row, a
    ///   key id Buckia would not give a key, or a signature that is not 64 bytes of base64url.
    static func read(_ connection: SQLiteConnection, present: Bool, path: String) throws -> DiffSignature? {
        guard present else { return nil }
        let rows = try connection.query("SELECT key_id, signature FROM buckia_signature") { ($0.value(0), $0.value(1)) }
        guard rows.count == 1, let row = rows.first else { throw DiffProblem.malformedSignature("\(rows.count) rows; a signed diff has one").error(path) }
        guard case .text(let keyId) = row.0, isKeyId(keyId) else {
            throw DiffProblem.malformedSignature("key_id is not 1 to 64 letters, digits, '.', '_' or '-'").error(path)
        }
        guard case .text(let text) = row.1, let bytes = Base64URL.decodeCanonical(text), bytes.count == 64 else {
            throw DiffProblem.malformedSignature("signature is not 64 bytes of unpadded base64url").error(path)
        }
        return DiffSignature(keyId: keyId, bytes: Array(bytes))
    }

    private static func isKeyId(_ text: String) -> Bool {
        do {
            try UserTokenKeyID.check(text)
            return true
        } catch {
            return false  // the reason is the caller's: a key id Buckia would not give a key
        }
    }
}

/// The public keys of the senders a database accepts diffs from, as each sender publishes them:
/// a JSON Web Key Set (`{"keys": [...]}`, RFC 7517) of Ed25519 keys at `keys/<user>.jwk`,
/// readable by every user and writable only by its owner. A rotated key stays in the set while
/// diffs signed with it may still arrive.
public struct SenderKeys: Sendable {
    /// The keys of each sender, by key id.
    public private(set) var keys: [String: [String: UserTokenVerificationKey]] = [:]
    /// The keys each user publishes for diffs sealed to them (X25519, `"use":"enc"`), by key id.
    public private(set) var recipientKeys: [String: [String: DiffRecipientKey]] = [:]

    /// No keys.
    public init() {}

    /// Adds `key` as one of `sender`'s.
    public mutating func add(_ key: UserTokenVerificationKey, for sender: String) throws {
        guard key.algorithm == .edDSA else {
            throw BuckiaError(.invalidConfiguration, "A sender's diff key is an Ed25519 public key; \(key.keyId) is \(key.algorithm.rawValue).")
        }
        keys[sender, default: [:]][key.keyId] = key
    }

    /// Adds the keys of `sender`'s published JSON Web Key Set.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a set that is not
    ///   `{"keys": [...]}` of Ed25519 public keys with distinct key ids: none of it is added.
    public mutating func add(jwkSet data: Data, for sender: String) throws {
        func bad(_ reason: String) -> BuckiaError {
            BuckiaError(.invalidConfiguration, "The published keys of \(sender.debugDescription) are not a JSON Web Key Set Buckia can use: \(reason).")
        }
        let list: [[String: Any]]
        do {
            list = try JWKSetReader.members(data, maximumBytes: 64 << 10)
        } catch {
            throw bad(error.reason)
        }
        var found: [String: UserTokenVerificationKey] = [:]
        var sealing: [String: DiffRecipientKey] = [:]
        for item in list {
            let member = item
            guard let text = String(data: try JSONSerialization.data(withJSONObject: member, options: [.sortedKeys]), encoding: .utf8)
            else { throw bad("a member of keys cannot be read back as JSON") }
            if member["crv"] as? String == "X25519" {
                // A key others seal diffs to this user with.
                guard member["kty"] as? String == "OKP", member["d"] == nil, let kid = member["kid"] as? String,
                      let x = member["x"] as? String, let bytes = Base64URL.decodeCanonical(x), bytes.count == 32
                else { throw bad("an X25519 member is not a public OKP key with a kid and 32 bytes of x") }
                let key = try DiffRecipientKey(keyId: kid, x25519PublicKey: Array(bytes))
                guard found[kid] == nil, sealing.updateValue(key, forKey: kid) == nil else { throw bad("the key id \(kid) is in it twice") }
                continue
            }
            let key = try UserTokenVerificationKey(jwk: text)
            guard sealing[key.keyId] == nil, found.updateValue(key, forKey: key.keyId) == nil else { throw bad("the key id \(key.keyId) is in it twice") }
        }
        for key in found.values { try add(key, for: sender) }
        for key in sealing.values { recipientKeys[sender, default: [:]][key.keyId] = key }
    }

    /// Where `user` publishes their keys: `<prefix><user>.jwk` (`keys/u1.jwk` by default).
    public static func location(of user: String, prefix: String = "keys/") throws -> ObjectKey {
        guard !user.isEmpty, user != ".", user != "..", !user.contains("/") else {
            throw BuckiaError(.invalidConfiguration, "A user id is one folder name (no '/', not '.' or '..').", operation: "publish keys", path: user)
        }
        return try ObjectKey("\(prefix)\(user).jwk")
    }

    /// Fetches the published keys of each of `senders` from `provider`; a sender who has
    /// published none gets none (their diffs then wait as ``DiffProblem/unknownSigningKey(sender:keyId:)``).
    ///
    /// - Throws: What the provider reports for anything but a missing file, and a published
    ///   file that is not a key set: a recipient never falls back to trusting less.
    public static func fetch(_ senders: some Sequence<String>, from provider: any StorageProvider, prefix: String = "keys/") async throws -> SenderKeys {
        var keys = SenderKeys()
        for sender in Set(senders) {
            let data: Data
            do {
                data = try await provider.readData(remotePath: try location(of: sender, prefix: prefix), options: ReadOptions())
            } catch let error as BuckiaError where error.code == .notFound {
                continue
            }
            try keys.add(jwkSet: data, for: sender)
        }
        return keys
    }

    /// Publishes `keys` as `user`'s key set on `provider` (replacing the one there: keep a
    /// rotated key in it while diffs signed with it may still arrive).
    @discardableResult
    public static func publish(
        _ keys: [UserTokenVerificationKey], recipientKeys: [DiffRecipientKey] = [], for user: String, to provider: any StorageProvider, prefix: String = "keys/"
    ) async throws -> ObjectKey {
        let key = try location(of: user, prefix: prefix)
        _ = try await provider.uploadData(jwkSet(keys, recipientKeys: recipientKeys), remotePath: key, options: UploadOptions(contentType: "application/jwk-set+json"))
        return key
    }

    /// `keys` (and the keys diffs are sealed to this user with) as the JSON Web Key Set a user publishes.
    public static func jwkSet(_ keys: [UserTokenVerificationKey], recipientKeys: [DiffRecipientKey] = []) throws -> Data {
        let members = try keys.map { key -> String in
            guard let jwk = key.jwk else { throw BuckiaError(.invalidConfiguration, "Only a public (Ed25519) key is published; \(key.keyId) is secret.") }
            return jwk
        } + recipientKeys.map(\.jwk)
        return Data("{\"keys\":[\(members.joined(separator: ","))]}".utf8)
    }
}

/// Whose diffs a database applies.
public enum SenderVerification: Sendable {
    /// Any diff, signed or not, whoever it names: for a database only its owner's own devices
    /// write to. The sender a diff names is then only what the file says.
    case unverified
    /// Only diffs signed by a key their sender published (``SenderKeys``), from senders in
    /// `accepting` (nil: every sender with keys). Anything else is refused before the database
    /// is touched.
    case signed(by: SenderKeys, accepting: Set<String>?)

    /// Checks `summary`'s signature under this policy.
    ///
    /// - Throws: The refusal: ``DiffProblem/unsigned``, ``DiffProblem/senderNotAccepted(_:)``,
    ///   ``DiffProblem/unknownSigningKey(sender:keyId:)`` or ``DiffProblem/badSignature(sender:keyId:)``.
    package func check(_ summary: DiffSummary, path: String) throws {
        guard case .signed(let senders, let accepting) = self else { return }
        let sender = summary.manifest.sender
        if let accepting, !accepting.contains(sender) { throw DiffProblem.senderNotAccepted(sender).error(path) }
        guard let signature = summary.signature else { throw DiffProblem.unsigned.error(path) }
        guard let key = senders.keys[sender]?[signature.keyId] else {
            throw DiffProblem.unknownSigningKey(sender: sender, keyId: signature.keyId).error(path)
        }
        let message = DiffSignature.message(keyId: signature.keyId, payloadSHA256: summary.manifest.payloadSHA256)
        guard key.isValid(signature: signature.bytes, of: message) else {
            throw DiffProblem.badSignature(sender: sender, keyId: signature.keyId).error(path)
        }
    }
}
