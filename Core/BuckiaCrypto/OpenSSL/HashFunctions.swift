#if !canImport(CryptoKit)
internal import COpenSSL
import Foundation

// Where CryptoKit does not exist (Linux), the subset of its API Buckia calls, with its type
// and method names, over OpenSSL's libcrypto. Call sites compile unchanged against either.
//
// The hash functions are the value types CryptoKit's are: a copy carries the state so far,
// and `finalize()` leaves the original usable. They keep libcrypto's fixed-size low-level
// contexts (`SHA256_CTX` and its kin), which copy as plain structs, never allocate and never
// fail (the EVP interface would allocate per hasher, copy a heap context per `finalize()`,
// and can refuse MD5 under a FIPS configuration where CryptoKit's `Insecure.MD5` cannot fail).

/// The output of a hash function: a fixed number of bytes, compared in constant time.
public protocol Digest: Hashable, Sendable, ContiguousBytes, CustomStringConvertible, Sequence where Element == UInt8 {
    /// The number of bytes in the digest.
    static var byteCount: Int { get }
}

extension Digest {
    /// The digest's bytes, first to last.
    public func makeIterator() -> Array<UInt8>.Iterator { bytes(of: self).makeIterator() }

    /// Whether two digests hold the same bytes, compared in time that does not depend on where
    /// they differ.
    public static func == (lhs: Self, rhs: Self) -> Bool { constantTimeEquals(lhs, rhs) }

    /// Whether the digest holds exactly `rhs`'s bytes, compared in constant time.
    public static func == <Bytes: DataProtocol>(lhs: Self, rhs: Bytes) -> Bool { constantTimeEquals(lhs, Array(rhs)) }

    public func hash(into hasher: inout Hasher) { withUnsafeBytes { hasher.combine(bytes: $0) } }

    public var description: String { "\(Self.self): \(hexadecimal(self))" }
}

/// A cryptographic hash function that takes its input in pieces.
public protocol HashFunction: Sendable {
    /// The number of bytes the function consumes at a time (what HMAC pads its key to).
    static var blockByteCount: Int { get }
    /// The type of the function's output.
    associatedtype Digest: BuckiaCrypto.Digest
    /// Starts a digest of nothing.
    init()
    /// Adds the bytes in `bufferPointer` to the input.
    mutating func update(bufferPointer: UnsafeRawBufferPointer)
    /// The digest of everything added so far; the function itself is unchanged.
    func finalize() -> Digest
}

extension HashFunction {
    /// The digest of `data`, in one call.
    public static func hash<D: DataProtocol>(data: D) -> Digest {
        var function = Self()
        function.update(data: data)
        return function.finalize()
    }

    /// Adds `data` to the input, region by region, without copying it.
    public mutating func update<D: DataProtocol>(data: D) {
        for region in data.regions {
            region.withUnsafeBytes { update(bufferPointer: $0) }
        }
    }
}

/// The SHA-256 hash function (FIPS 180-4).
public struct SHA256: HashFunction {
    public static let blockByteCount = 64
    private var context = SHA256_CTX()

    public init() { SHA256_Init(&context) }

    public mutating func update(bufferPointer: UnsafeRawBufferPointer) {
        guard let base = bufferPointer.baseAddress, bufferPointer.count > 0 else { return }
        SHA256_Update(&context, base, bufferPointer.count)
    }

    public func finalize() -> SHA256Digest {
        var context = self.context
        var digest = SHA256Digest()
        withUnsafeMutableBytes(of: &digest.storage) { _ = SHA256_Final($0.bindMemory(to: UInt8.self).baseAddress, &context) }
        return digest
    }
}

/// The output of ``SHA256``: 32 bytes, held inline (a digest never allocates: an HMAC makes two).
public struct SHA256Digest: Digest {
    public static let byteCount = 32
    var storage: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: storage, body)
    }
}

/// Hash functions too weak for signatures or passwords, kept for the checksums protocols still
/// name (S3's `Content-MD5` and ETags, B2's SHA-1).
public enum Insecure {
    /// The MD5 hash function (RFC 1321).
    public struct MD5: HashFunction {
        public static let blockByteCount = 64
        private var context = MD5_CTX()

        public init() { MD5_Init(&context) }

        public mutating func update(bufferPointer: UnsafeRawBufferPointer) {
            guard let base = bufferPointer.baseAddress, bufferPointer.count > 0 else { return }
            MD5_Update(&context, base, bufferPointer.count)
        }

        public func finalize() -> MD5Digest {
            var context = self.context
            var digest = MD5Digest()
            withUnsafeMutableBytes(of: &digest.storage) { _ = MD5_Final($0.bindMemory(to: UInt8.self).baseAddress, &context) }
            return digest
        }
    }

    /// The output of ``MD5``: 16 bytes, held inline.
    public struct MD5Digest: Digest {
        public static let byteCount = 16
        var storage: (UInt64, UInt64) = (0, 0)

        public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try Swift.withUnsafeBytes(of: storage, body)
        }
    }

    /// The SHA-1 hash function (FIPS 180-4).
    public struct SHA1: HashFunction {
        public static let blockByteCount = 64
        private var context = SHA_CTX()

        public init() { SHA1_Init(&context) }

        public mutating func update(bufferPointer: UnsafeRawBufferPointer) {
            guard let base = bufferPointer.baseAddress, bufferPointer.count > 0 else { return }
            SHA1_Update(&context, base, bufferPointer.count)
        }

        public func finalize() -> SHA1Digest {
            var context = self.context
            var digest = SHA1Digest()
            withUnsafeMutableBytes(of: &digest.storage) { _ = SHA1_Final($0.bindMemory(to: UInt8.self).baseAddress, &context) }
            return digest
        }
    }

    /// The output of ``SHA1``: 20 bytes, held inline (a tuple of 8 + 8 + 4 bytes has no padding
    /// inside its 20).
    public struct SHA1Digest: Digest {
        public static let byteCount = 20
        var storage: (UInt64, UInt64, UInt32) = (0, 0, 0)

        public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try Swift.withUnsafeBytes(of: storage, body)
        }
    }
}

/// Whether two byte strings are equal, in time that depends only on their lengths.
func constantTimeEquals(_ lhs: some ContiguousBytes, _ rhs: some ContiguousBytes) -> Bool {
    lhs.withUnsafeBytes { left in
        rhs.withUnsafeBytes { right in
            guard left.count == right.count else { return false }
            var difference: UInt8 = 0
            for index in 0..<left.count { difference |= left[index] ^ right[index] }
            return difference == 0
        }
    }
}

/// A copy of the bytes.
func bytes(of value: some ContiguousBytes) -> [UInt8] { value.withUnsafeBytes { Array($0) } }

/// Lowercase hexadecimal of the bytes.
func hexadecimal(_ value: some ContiguousBytes) -> String {
    value.withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
}
#endif
