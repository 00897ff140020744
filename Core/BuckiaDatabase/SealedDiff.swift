import BuckiaCore
internal import BuckiaCrypto
import BuckiaSecurity
import Foundation

/// A recipient's public key for sealed diffs: X25519, published beside the user's signing keys
/// in `keys/<user>.jwk` as `{"kty":"OKP","crv":"X25519","use":"enc","kid":…,"x":…}`.
public struct DiffRecipientKey: Sendable, Hashable {
    /// The key's id, which a sealed diff names.
    public let keyId: String
    let bytes: [UInt8]

    /// The X25519 public key `bytes` (32), named `keyId`.
    public init(keyId: String, x25519PublicKey bytes: [UInt8]) throws {
        try UserTokenKeyID.check(keyId)
        guard bytes.count == 32 else { throw BuckiaError(.invalidConfiguration, "An X25519 public key is 32 bytes; \(keyId)'s is \(bytes.count).") }
        self.keyId = keyId
        self.bytes = bytes
    }

    /// The key as a JSON Web Key (RFC 8037).
    public var jwk: String {
        #"{"crv":"X25519","kid":"\#(keyId)","kty":"OKP","use":"enc","x":"\#(Base64URL.encode(Data(bytes)))"}"#
    }
}

/// A recipient's private key for sealed diffs: kept by its owner (a secret store), never published.
public struct DiffRecipientPrivateKey: Sendable, CustomStringConvertible {
    /// The key's id.
    public let keyId: String
    private let secret: Secret

    /// A fresh key named `keyId`.
    public static func generate(keyId: String) throws -> DiffRecipientPrivateKey {
        try DiffRecipientPrivateKey(keyId: keyId, encoded: Secret(Base64URL.encode(Data(try SecureRandom.bytes(count: 32)))))
    }

    /// The key whose 32 bytes are `encoded` (unpadded base64url), as a secret store keeps it.
    public init(keyId: String, encoded: Secret) throws {
        try UserTokenKeyID.check(keyId)
        guard let bytes = Base64URL.decodeCanonical(encoded.exposedValue), bytes.count == 32 else {
            throw BuckiaError(.invalidConfiguration, "The recipient key \(keyId) is not 32 bytes of unpadded base64url.")
        }
        self.keyId = keyId
        self.secret = encoded
    }

    /// The key's bytes as a secret store keeps them.
    public var encoded: Secret { secret }

    var agreementKey: Curve25519.KeyAgreement.PrivateKey {
        get throws {
            guard let bytes = Base64URL.decodeCanonical(secret.exposedValue) else {
                throw BuckiaError(.invalidConfiguration, "The recipient key \(keyId) is damaged.")
            }
            return try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: bytes)
        }
    }

    /// The public half, to publish.
    public func publicKey() throws -> DiffRecipientKey {
        try DiffRecipientKey(keyId: keyId, x25519PublicKey: Array(try agreementKey.publicKey.rawRepresentation))
    }

    public var description: String { "DiffRecipientPrivateKey(\(keyId), <REDACTED>)" }
}

/// A diff sealed to its recipient with HPKE (RFC 9180: base mode, DHKEM(X25519, HKDF-SHA256),
/// HKDF-SHA256, AES-256-GCM), so the storage provider and a gateway's operator cannot read it.
/// Sealing is decided per send; applying opens a sealed diff with the recipient's key, then
/// checks and applies what is inside like any diff, its signature included.
///
/// The file is `<KSUID>.sealed`:
///
/// - the header: the 19 bytes `buckia-sealed-diff` and a NUL, the version byte `1`, one byte
///   with the length of the recipient key's id, the id (UTF-8), and the 32-byte encapsulated key;
/// - then the HPKE ciphertext of the whole diff file, sealed with `info` =
///   `buckia-sealed-diff/v1\n<KSUID>` and the header as associated data, so neither the name nor
///   the header can be changed without the opening failing.
public enum SealedDiff {
    /// The file name extension.
    public static let fileExtension = "sealed"
    static let magic = Array("buckia-sealed-diff\u{0}".utf8)
    static let version: UInt8 = 1
    static let suite = HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_256)

    static func info(_ id: String) -> Data { Data("buckia-sealed-diff/v1\n\(id)".utf8) }

    /// Seals the diff at `diff` (checked first) to `recipient`, writing `<KSUID>.sealed` into
    /// `folder` (never over an existing file).
    ///
    /// - Returns: The sealed file.
    public static func seal(_ diff: URL, to recipient: DiffRecipientKey, in folder: URL, limits: DiffLimits = DiffLimits(), now: Date = Date()) throws -> URL {
        let summary = try DiffSummary(contentsOf: diff, limits: limits, now: now)
        let plaintext = try DiffReader.readBounded(diff, limit: limits.maximumFileSize)
        let id = summary.manifest.id.description
        var sender = try HPKE.Sender(recipientKey: try Curve25519.KeyAgreement.PublicKey(rawRepresentation: recipient.bytes), ciphersuite: suite, info: info(id))
        let header = magic + [version, UInt8(recipient.keyId.utf8.count)] + Array(recipient.keyId.utf8) + Array(sender.encapsulatedKey)
        let ciphertext = try sender.seal(plaintext, authenticating: header)
        try LocalFile.createDirectories(folder.path)
        let destination = folder.appendingPathComponent("\(id).\(fileExtension)", isDirectory: false)
        guard !FileManager.default.fileExists(atPath: destination.path) else {
            throw BuckiaError(.alreadyExists, "\(destination.path) already exists; a sealed diff is never overwritten.", operation: "seal diff", path: destination.path)
        }
        try AtomicFile.write(Data(header) + ciphertext, to: destination, permissions: 0o644)
        return destination
    }

    /// The diff inside the sealed file at `url`, opened with the one of `keys` it was sealed to.
    ///
    /// - Throws: ``DiffProblem/malformedSeal(_:)``, ``DiffProblem/noRecipientKey(_:)`` (sealed
    ///   to a key not given: tried again later) or ``DiffProblem/sealNotOpened`` (changed, renamed,
    ///   or sealed to another key under that id).
    package static func open(_ url: URL, keys: [DiffRecipientPrivateKey], limits: DiffLimits) throws -> Data {
        let path = url.path
        // Room for the header and the tag beyond the diff itself.
        let (limit, overflow) = limits.maximumFileSize.addingReportingOverflow(512)
        let bytes = Array(try DiffReader.readBounded(url, limit: overflow ? Int64.max : limit))
        let fixed = magic.count + 2
        guard bytes.count >= fixed, Array(bytes[0..<magic.count]) == magic else { throw DiffProblem.malformedSeal("it does not start as a sealed diff").error(path) }
        guard bytes[magic.count] == version else { throw DiffProblem.malformedSeal("its version is \(bytes[magic.count]), not \(version)").error(path) }
        let idLength = Int(bytes[magic.count + 1])
        let headerLength = fixed + idLength + 32
        guard idLength >= 1, bytes.count >= headerLength + 16 else { throw DiffProblem.malformedSeal("it is shorter than its header and tag").error(path) }
        guard let keyId = String(validating: bytes[fixed..<(fixed + idLength)], as: UTF8.self) else {
            throw DiffProblem.malformedSeal("its key id is not UTF-8").error(path)
        }
        guard let key = keys.first(where: { $0.keyId == keyId }) else { throw DiffProblem.noRecipientKey(keyId).error(path) }
        let stem = url.deletingPathExtension().lastPathComponent
        guard KSUID(stem) != nil else { throw DiffProblem.malformedSeal("its name is not <KSUID>.sealed").error(path) }
        let header = Array(bytes[0..<headerLength])
        do {
            var recipient = try HPKE.Recipient(
                privateKey: try key.agreementKey, ciphersuite: suite, info: info(stem), encapsulatedKey: Data(bytes[(fixed + idLength)..<headerLength]))
            return try recipient.open(bytes[headerLength...], authenticating: header)
        } catch {
            // Any failure to open a well-formed seal is a changed file or another key.
            throw DiffProblem.sealNotOpened.error(path)
        }
    }
}
