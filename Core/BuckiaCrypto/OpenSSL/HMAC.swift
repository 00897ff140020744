#if !canImport(CryptoKit)
import Foundation

/// A message authentication code: the output of ``HMAC``.
public protocol MessageAuthenticationCode: Hashable, ContiguousBytes, CustomStringConvertible, Sequence where Element == UInt8 {
    /// The number of bytes in the code.
    var byteCount: Int { get }
}

extension MessageAuthenticationCode {
    /// The code's bytes, first to last.
    public func makeIterator() -> Array<UInt8>.Iterator { bytes(of: self).makeIterator() }

    /// Whether two codes hold the same bytes, compared in constant time.
    public static func == (lhs: Self, rhs: Self) -> Bool { constantTimeEquals(lhs, rhs) }

    /// Whether the code holds exactly `rhs`'s bytes, compared in constant time.
    public static func == <Bytes: DataProtocol>(lhs: Self, rhs: Bytes) -> Bool { constantTimeEquals(lhs, Array(rhs)) }

    public func hash(into hasher: inout Hasher) { withUnsafeBytes { hasher.combine(bytes: $0) } }
}

/// A keyed-hash message authentication code (RFC 2104) over any ``HashFunction``.
public struct HMAC<H: HashFunction>: Sendable {
    /// The key type.
    public typealias Key = SymmetricKey
    /// The code type.
    public typealias MAC = HashedAuthenticationCode<H>

    private var inner: H
    private var outer: H

    /// Starts a code under `key`. A key longer than the hash's block is hashed first, as
    /// RFC 2104 says; a shorter one is padded with zeros.
    public init(key: SymmetricKey) {
        var inner = H()
        var outer = H()
        // The padded key on the stack: a short message's HMAC allocates nothing here.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: H.blockByteCount) { block in
            block.initialize(repeating: 0)
            let fill = { (bytes: UnsafeRawBufferPointer) in
                for (index, byte) in bytes.prefix(block.count).enumerated() { block[index] = byte }
            }
            key.withUnsafeBytes { keyBytes in
                if keyBytes.count > H.blockByteCount {
                    var function = H()
                    function.update(bufferPointer: keyBytes)
                    function.finalize().withUnsafeBytes(fill)
                } else {
                    fill(keyBytes)
                }
            }
            for index in block.indices { block[index] ^= 0x36 }
            inner.update(bufferPointer: UnsafeRawBufferPointer(block))
            for index in block.indices { block[index] ^= 0x36 ^ 0x5c }
            outer.update(bufferPointer: UnsafeRawBufferPointer(block))
        }
        self.inner = inner
        self.outer = outer
    }

    /// The code of `data` under `key`, in one call.
    public static func authenticationCode<D: DataProtocol>(for data: D, using key: SymmetricKey) -> MAC {
        var code = Self(key: key)
        code.update(data: data)
        return code.finalize()
    }

    /// Whether `authenticationCode` is `data`'s code under `key`, compared in constant time.
    public static func isValidAuthenticationCode<D: DataProtocol>(_ authenticationCode: MAC, authenticating data: D, using key: SymmetricKey) -> Bool {
        authenticationCode == Self.authenticationCode(for: data, using: key)
    }

    /// Whether the bytes `authenticationCode` are `data`'s code under `key`, compared in
    /// constant time.
    public static func isValidAuthenticationCode<C: ContiguousBytes, D: DataProtocol>(
        _ authenticationCode: C, authenticating data: D, using key: SymmetricKey
    ) -> Bool {
        constantTimeEquals(authenticationCode, Self.authenticationCode(for: data, using: key))
    }

    /// Adds `data` to the message.
    public mutating func update<D: DataProtocol>(data: D) {
        inner.update(data: data)
    }

    /// The code of the message so far.
    public func finalize() -> MAC {
        var outer = self.outer
        inner.finalize().withUnsafeBytes { outer.update(bufferPointer: $0) }
        return HashedAuthenticationCode(digest: outer.finalize())
    }
}

/// The code an ``HMAC`` over `H` produces: as many bytes as `H`'s digest.
public struct HashedAuthenticationCode<H: HashFunction>: MessageAuthenticationCode, Sendable {
    let digest: H.Digest

    public var byteCount: Int { H.Digest.byteCount }

    public var description: String {
        "HMAC with \(H.self): \(hexadecimal(self))"
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try digest.withUnsafeBytes(body)
    }
}
#endif
