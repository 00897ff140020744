#if !canImport(CryptoKit)
internal import COpenSSL
import Foundation

/// The Advanced Encryption Standard.
public enum AES {
    /// AES in Galois/Counter Mode (NIST SP 800-38D): encryption that also detects tampering.
    /// The key's length picks AES-128, AES-192 or AES-256; tags are 16 bytes.
    public enum GCM {
        static let tagByteCount = 16
        static let defaultNonceByteCount = 12

        /// A nonce: never use one twice with the same key.
        public struct Nonce: ContiguousBytes, Sequence, Sendable {
            let bytes: [UInt8]

            /// A random 12-byte nonce, safe for 2³² messages under one key.
            public init() {
                bytes = SymmetricKey(size: SymmetricKeySize(bitCount: GCM.defaultNonceByteCount * 8)).withUnsafeBytes { Array($0) }
            }

            /// The nonce `data`, which must be at least 12 bytes.
            ///
            /// - Throws: ``CryptoKitError/incorrectParameterSize`` when it is shorter.
            public init<D: DataProtocol>(data: D) throws {
                guard data.count >= GCM.defaultNonceByteCount else { throw CryptoKitError.incorrectParameterSize }
                bytes = Array(data)
            }

            public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
                try bytes.withUnsafeBytes(body)
            }

            public func makeIterator() -> Array<UInt8>.Iterator { bytes.makeIterator() }
        }

        /// What ``seal(_:using:nonce:authenticating:)`` returns: the nonce, the ciphertext and
        /// the tag.
        public struct SealedBox: Sendable {
            /// The nonce the message was sealed with.
            public let nonce: Nonce
            /// The encrypted message, as long as the plaintext.
            public let ciphertext: Data
            /// The 16-byte authentication tag.
            public let tag: Data

            /// `nonce ‖ ciphertext ‖ tag`, the form to store; nil when the nonce is not 12 bytes
            /// (its length could then not be told apart on reading).
            public var combined: Data? {
                guard nonce.bytes.count == GCM.defaultNonceByteCount else { return nil }
                return Data(nonce.bytes) + ciphertext + tag
            }

            /// Splits a combined box (a 12-byte nonce first, the 16-byte tag last).
            ///
            /// - Throws: ``CryptoKitError/incorrectParameterSize`` if it is too short to hold both.
            public init<D: DataProtocol>(combined: D) throws {
                let bytes = Array(combined)
                guard bytes.count >= GCM.defaultNonceByteCount + GCM.tagByteCount else { throw CryptoKitError.incorrectParameterSize }
                nonce = try Nonce(data: bytes.prefix(GCM.defaultNonceByteCount))
                ciphertext = Data(bytes[GCM.defaultNonceByteCount..<(bytes.count - GCM.tagByteCount)])
                tag = Data(bytes.suffix(GCM.tagByteCount))
            }

            /// Assembles a box from its parts.
            ///
            /// - Throws: ``CryptoKitError/incorrectParameterSize`` unless the tag is 16 bytes.
            public init<C: DataProtocol, T: DataProtocol>(nonce: Nonce, ciphertext: C, tag: T) throws {
                guard tag.count == GCM.tagByteCount else { throw CryptoKitError.incorrectParameterSize }
                self.nonce = nonce
                self.ciphertext = Data(ciphertext)
                self.tag = Data(tag)
            }
        }

        /// Encrypts `message` and authenticates it with `authenticatedData`, which is not
        /// encrypted.
        ///
        /// - Parameter nonce: nil draws a random one.
        /// - Throws: ``CryptoKitError/incorrectKeySize`` unless the key is 16, 24 or 32 bytes.
        public static func seal<Plaintext: DataProtocol, AuthenticatedData: DataProtocol>(
            _ message: Plaintext, using key: SymmetricKey, nonce: Nonce? = nil, authenticating authenticatedData: AuthenticatedData
        ) throws -> SealedBox {
            let nonce = nonce ?? Nonce()
            let cipher = try Self.cipher(for: key)
            let input = Array(message)
            let aad = Array(authenticatedData)
            var output = [UInt8](repeating: 0, count: input.count)
            var tag = [UInt8](repeating: 0, count: tagByteCount)
            try withContext { context in
                var length: Int32 = 0
                let started = key.withUnsafeBytes { keyBytes in
                    EVP_EncryptInit_ex(context, cipher, nil, nil, nil) == 1
                        && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.bytes.count), nil) == 1
                        && EVP_EncryptInit_ex(context, nil, nil, keyBytes.bindMemory(to: UInt8.self).baseAddress, nonce.bytes) == 1
                }
                guard started,
                      try aad.isEmpty || EVP_EncryptUpdate(context, nil, &length, aad, lengthOf(aad)) == 1,
                      try input.isEmpty || EVP_EncryptUpdate(context, &output, &length, input, lengthOf(input)) == 1,
                      finish(context),
                      EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), &tag) == 1
                else { throw libcryptoFailure() }
            }
            return try SealedBox(nonce: nonce, ciphertext: output, tag: tag)
        }

        /// Encrypts and authenticates `message`.
        public static func seal<Plaintext: DataProtocol>(_ message: Plaintext, using key: SymmetricKey, nonce: Nonce? = nil) throws -> SealedBox {
            try seal(message, using: key, nonce: nonce, authenticating: [UInt8]())
        }

        /// Decrypts `sealedBox`, checking that neither it nor `authenticatedData` was changed.
        ///
        /// - Throws: ``CryptoKitError/authenticationFailure`` when the check fails: the data was
        ///   altered, or the key is not the one it was sealed with.
        public static func open<AuthenticatedData: DataProtocol>(
            _ sealedBox: SealedBox, using key: SymmetricKey, authenticating authenticatedData: AuthenticatedData
        ) throws -> Data {
            let cipher = try Self.cipher(for: key)
            let input = Array(sealedBox.ciphertext)
            let aad = Array(authenticatedData)
            var tag = Array(sealedBox.tag)
            var output = [UInt8](repeating: 0, count: input.count)
            var verified = false
            try withContext { context in
                var length: Int32 = 0
                let started = key.withUnsafeBytes { keyBytes in
                    EVP_DecryptInit_ex(context, cipher, nil, nil, nil) == 1
                        && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(sealedBox.nonce.bytes.count), nil) == 1
                        && EVP_DecryptInit_ex(context, nil, nil, keyBytes.bindMemory(to: UInt8.self).baseAddress, sealedBox.nonce.bytes) == 1
                }
                guard started,
                      try aad.isEmpty || EVP_DecryptUpdate(context, nil, &length, aad, lengthOf(aad)) == 1,
                      try input.isEmpty || EVP_DecryptUpdate(context, &output, &length, input, lengthOf(input)) == 1,
                      EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), &tag) == 1
                else { throw libcryptoFailure() }
                // GCM writes nothing at the end; the call is where the tag is checked.
                var end = [UInt8](repeating: 0, count: 16)
                verified = EVP_DecryptFinal_ex(context, &end, &length) == 1
                ERR_clear_error()
            }
            guard verified else { throw CryptoKitError.authenticationFailure }
            return Data(output)
        }

        /// Decrypts `sealedBox`, checking that it was not changed.
        public static func open(_ sealedBox: SealedBox, using key: SymmetricKey) throws -> Data {
            try open(sealedBox, using: key, authenticating: [UInt8]())
        }

        /// Ends encryption; GCM writes nothing here, but the call computes the tag.
        private static func finish(_ context: OpaquePointer) -> Bool {
            var end = [UInt8](repeating: 0, count: 16)
            var length: Int32 = 0
            return EVP_EncryptFinal_ex(context, &end, &length) == 1
        }

        private static func cipher(for key: SymmetricKey) throws -> OpaquePointer? {
            switch key.bitCount {
            case 128: EVP_aes_128_gcm()
            case 192: EVP_aes_192_gcm()
            case 256: EVP_aes_256_gcm()
            default: throw CryptoKitError.incorrectKeySize
            }
        }

        private static func withContext(_ body: (OpaquePointer) throws -> Void) throws {
            guard let context = EVP_CIPHER_CTX_new() else { throw libcryptoFailure() }
            defer { EVP_CIPHER_CTX_free(context) }
            try body(context)
        }

        /// libcrypto takes lengths as `Int32`; a message of 2 GiB or more is refused rather
        /// than truncated.
        private static func lengthOf(_ bytes: [UInt8]) throws -> Int32 {
            guard let length = Int32(exactly: bytes.count) else { throw CryptoKitError.incorrectParameterSize }
            return length
        }
    }
}

/// libcrypto's most recent error as a ``CryptoKitError``, with its queue cleared.
func libcryptoFailure() -> CryptoKitError {
    let code = ERR_get_error()
    ERR_clear_error()
    return .underlyingCoreCryptoError(error: Int32(truncatingIfNeeded: code))
}
#endif
