#if !canImport(CryptoKit)
import Foundation

/// A key for symmetric cryptography (HMAC, AES-GCM).
public struct SymmetricKey: ContiguousBytes, Sendable {
    private let bytes: [UInt8]

    /// A key holding exactly `data`'s bytes.
    public init<D: ContiguousBytes>(data: D) {
        bytes = data.withUnsafeBytes { Array($0) }
    }

    /// A fresh key of `size`, from the system's cryptographically secure generator
    /// (`getrandom` on Linux, as Swift's `SystemRandomNumberGenerator` documents).
    public init(size: SymmetricKeySize) {
        var generator = SystemRandomNumberGenerator()
        // Whole bytes, a part byte rounded up, written so that no size can overflow.
        let count = size.bitCount > 0 ? size.bitCount / 8 + (size.bitCount % 8 == 0 ? 0 : 1) : 0
        var bytes = [UInt8]()
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            Swift.withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        self.bytes = Array(bytes.prefix(count))
    }

    /// The key's length in bits.
    public var bitCount: Int { bytes.count * 8 }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }
}

extension SymmetricKey: Equatable {
    /// Whether two keys are the same bytes, compared in constant time.
    public static func == (lhs: Self, rhs: Self) -> Bool { constantTimeEquals(lhs, rhs) }
}

/// The length of a ``SymmetricKey``.
public struct SymmetricKeySize: Sendable {
    /// The length in bits.
    public let bitCount: Int

    /// A length of `bitCount` bits, meant to be a positive multiple of 8. CryptoKit traps on
    /// anything else; this subset never traps: ``SymmetricKey/init(size:)`` rounds a part byte up
    /// and makes an empty key of a size that is not positive. (Buckia passes only whole bytes.)
    public init(bitCount: Int) {
        self.bitCount = bitCount
    }

    /// 128 bits, for AES-128.
    public static let bits128 = SymmetricKeySize(bitCount: 128)
    /// 192 bits, for AES-192.
    public static let bits192 = SymmetricKeySize(bitCount: 192)
    /// 256 bits, for AES-256 and HMAC-SHA256.
    public static let bits256 = SymmetricKeySize(bitCount: 256)
}

/// The errors CryptoKit's operations throw.
public enum CryptoKitError: Error, Equatable, Hashable {
    /// A key is not a length the operation accepts.
    case incorrectKeySize
    /// A nonce, tag or other parameter is not a length the operation accepts.
    case incorrectParameterSize
    /// An authentication tag or signature does not match: the data was altered or the key is wrong.
    case authenticationFailure
    /// The underlying library failed (here libcrypto, with its error code).
    case underlyingCoreCryptoError(error: Int32)
    /// A key could not be wrapped.
    case wrapFailure
    /// A key could not be unwrapped.
    case unwrapFailure
    /// A parameter is invalid.
    case invalidParameter
}
#endif
