import Foundation

/// An RSA public key that checks RSASSA-PKCS1-v1_5 signatures over SHA-256: JSON Web Token's
/// `RS256`, what OpenID Connect issuers (Okta, Google, Auth0, Keycloak) sign ID tokens with by
/// default.
///
/// CryptoKit has no RSA, so this type is Buckia's own: the key is read and checked here, on
/// every platform, and handed as a PKCS #1 `RSAPublicKey` to the platform's implementation —
/// the Security framework's `SecKeyVerifySignature` on Apple platforms, libcrypto's
/// `EVP_DigestVerify` elsewhere. Only verification is offered: Buckia never signs with RSA.
public struct RSAPublicKey: Sendable, Hashable {
    /// The smallest modulus accepted: NIST SP 800-131A disallows RSA signatures under 2048 bits.
    public static let minimumBitCount = 2048
    /// The largest modulus accepted (Apple's Security framework handles up to 8192 bits).
    public static let maximumBitCount = 8192

    /// The modulus `n`, big-endian, without leading zero bytes.
    public let modulus: [UInt8]
    /// The public exponent `e`, big-endian, without leading zero bytes.
    public let exponent: [UInt8]

    /// The key with modulus `modulus` and public exponent `exponent`, each an unsigned
    /// big-endian integer as a JSON Web Key's `n` and `e` carry them (RFC 7518 §6.3.1).
    ///
    /// - Throws: ``RSAKeyRefusal`` for a modulus outside 2048–8192 bits or even, or an exponent
    ///   that is even, under 3, or over 32 bits.
    public init(modulus: [UInt8], exponent: [UInt8]) throws(RSAKeyRefusal) {
        let n = Array(modulus.drop { $0 == 0 })
        let e = Array(exponent.drop { $0 == 0 })
        guard let top = n.first else { throw RSAKeyRefusal("its modulus is zero") }
        let bits = n.count * 8 - top.leadingZeroBitCount
        guard bits >= Self.minimumBitCount, bits <= Self.maximumBitCount else {
            throw RSAKeyRefusal("its modulus has \(bits) bits; \(Self.minimumBitCount) to \(Self.maximumBitCount) are accepted")
        }
        guard let last = n.last, last & 1 == 1 else { throw RSAKeyRefusal("its modulus is even") }
        guard e.count <= 4, let low = e.last, low & 1 == 1, e.count > 1 || low >= 3 else {
            throw RSAKeyRefusal("its public exponent is not an odd number from 3 to 2^32 - 1")
        }
        self.modulus = n
        self.exponent = e
    }

    /// The modulus's size in bits.
    public var bitCount: Int { modulus.count * 8 - (modulus.first?.leadingZeroBitCount ?? 8) }

    /// The key as PKCS #1 `RSAPublicKey` DER (RFC 8017 §A.1.1): `SEQUENCE { n INTEGER, e INTEGER }`.
    public var pkcs1DERRepresentation: [UInt8] {
        DER.sequence(DER.integer(modulus) + DER.integer(exponent))
    }

    /// Whether `signature` is this key's RSASSA-PKCS1-v1_5 signature of SHA-256(`message`)
    /// (RFC 8017 §8.2.2). A signature of any length but the modulus's is not valid.
    public func isValidPKCS1v15SHA256Signature(_ signature: some DataProtocol, for message: some DataProtocol) -> Bool {
        let signature = Array(signature)
        guard signature.count == modulus.count else { return false }
        return platformVerifiesPKCS1v15SHA256(signature: signature, message: Array(message))
    }
}

/// Why bytes are not an RSA public key Buckia checks signatures with.
public struct RSAKeyRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the key.
    public let reason: String

    init(_ reason: String) { self.reason = reason }

    public var description: String { "The RSA public key is refused: \(reason)." }
}

/// The little of DER that an RSA public key needs.
enum DER {
    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    /// An unsigned integer: a zero byte first when its top bit is set, so it stays positive.
    static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        let content = (magnitude.first ?? 0x80) & 0x80 != 0 ? [0] + magnitude : magnitude
        return [0x02] + length(content.count) + content
    }

    static func sequence(_ content: [UInt8]) -> [UInt8] { [0x30] + length(content.count) + content }
}
