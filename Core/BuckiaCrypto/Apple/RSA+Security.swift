// The Security framework's RSA signature check. Never compiled on the Linux machine that builds
// and tests Buckia (Docs/Platforms.md lists it); OpenSSL/RSA.swift is its counterpart there.
#if canImport(CryptoKit)
import Foundation
import Security

extension RSAPublicKey {
    /// `SecKeyCreateWithData` takes an RSA public key as PKCS #1 `RSAPublicKey` DER;
    /// `SecKeyVerifySignature` hashes the message with SHA-256 and checks the PKCS #1 v1.5
    /// signature.
    func platformVerifiesPKCS1v15SHA256(signature: [UInt8], message: [UInt8]) -> Bool {
        let attributes: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPublic, kSecAttrKeySizeInBits: bitCount,
        ]
        guard let key = SecKeyCreateWithData(Data(pkcs1DERRepresentation) as CFData, attributes as CFDictionary, nil) else { return false }
        return SecKeyVerifySignature(key, .rsaSignatureMessagePKCS1v15SHA256, Data(message) as CFData, Data(signature) as CFData, nil)
    }
}
#endif
