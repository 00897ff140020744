#if !canImport(CryptoKit)
internal import COpenSSL
import Foundation

extension RSAPublicKey {
    /// libcrypto's check: the PKCS #1 key through `d2i_PublicKey`, then `EVP_DigestVerify` with
    /// SHA-256 (whose default RSA padding is PKCS #1 v1.5).
    func platformVerifiesPKCS1v15SHA256(signature: [UInt8], message: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        let der = pkcs1DERRepresentation
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PublicKey(EVP_PKEY_RSA, nil, &cursor, buffer.count)
        }
        guard let key else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        return EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1
            && EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }
}
#endif
