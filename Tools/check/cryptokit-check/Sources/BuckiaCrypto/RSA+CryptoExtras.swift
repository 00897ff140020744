// RSAPublicKey's check over swift-crypto's _CryptoExtras (BoringSSL), standing in for the
// Security framework on Apple platforms and libcrypto on Linux: Buckia's own key reading and
// PKCS #1 encoding (RSAPublicKey.swift, linked) meet a third implementation, which parses the
// DER itself, and the same vectors.
import _CryptoExtras
import Foundation

extension RSAPublicKey {
    func platformVerifiesPKCS1v15SHA256(signature: [UInt8], message: [UInt8]) -> Bool {
        let key: _RSA.Signing.PublicKey
        do {
            key = try _RSA.Signing.PublicKey(derRepresentation: pkcs1DERRepresentation)
        } catch {
            return false  // a key BoringSSL will not read checks nothing; the tests say which
        }
        return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: message, padding: .insecurePKCS1v1_5)
    }
}
