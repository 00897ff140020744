internal import BuckiaCrypto
import BuckiaCore
import Foundation

/// scrypt (RFC 7914), the memory-hard key derivation the encrypted secret store uses, written in
/// Swift over CryptoKit's `HMAC<SHA256>`: CryptoKit has no scrypt, and neither iOS nor tvOS has a
/// libcrypto to borrow one from. RFC 7914's test vectors check it (ScryptTests), and buckia-bench
/// times it beside libcrypto's `EVP_PBE_scrypt`.
package enum Scrypt {
    /// The `length`-byte key scrypt derives from `password` and `salt` with cost `n` (a power of
    /// two above 1), block size `r` and parallelism `p`.
    ///
    /// Memory: 128·r·n bytes for the table, plus 128·r·p for the blocks.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for parameters RFC 7914 rules out or
    ///   whose sizes do not fit in memory's address space.
    package static func deriveKey(password: [UInt8], salt: [UInt8], n: Int, r: Int, p: Int, length: Int) throws -> [UInt8] {
        let (blockBytes, blockOverflow) = (128 as Int).multipliedReportingOverflow(by: r)
        let (_, tableOverflow) = blockBytes.multipliedReportingOverflow(by: n)
        let (allBlocks, allOverflow) = blockBytes.multipliedReportingOverflow(by: p)
        guard n > 1, n & (n - 1) == 0, r >= 1, p >= 1, length >= 1, !blockOverflow, !tableOverflow, !allOverflow,
              r * p < 1 << 30, length <= (1 << 32 - 1) * 32
        else {
            throw BuckiaError(
                .invalidConfiguration,
                "scrypt cannot run with N=\(n), r=\(r), p=\(p) and a \(length)-byte key: N must be a power of two above 1, r·p below 2^30, and the key 1 byte to (2^32 − 1)·32.")
        }
        var blocks = PBKDF2.sha256(password: password, salt: salt, length: allBlocks)
        let words = 32 * r
        let table = UnsafeMutablePointer<UInt32>.allocate(capacity: words * n)
        defer { table.deallocate() }
        let scratch = UnsafeMutablePointer<UInt32>.allocate(capacity: 3 * words)
        defer { scratch.deallocate() }
        for index in 0..<p {
            blocks.withUnsafeMutableBytes { bytes in
                guard let base = bytes.baseAddress else { return }
                let block = base + index * blockBytes
                for word in 0..<words { scratch[word] = UInt32(littleEndian: block.loadUnaligned(fromByteOffset: 4 * word, as: UInt32.self)) }
                mix(scratch, r: r, n: n, table: table, spare: scratch + words)
                for word in 0..<words { block.storeBytes(of: scratch[word].littleEndian, toByteOffset: 4 * word, as: UInt32.self) }
            }
        }
        return PBKDF2.sha256(password: password, salt: blocks, length: length)
    }

    /// ROMix: fills the table with `n` successive BlockMix outputs of `x`, then mixes `x` with
    /// `n` entries it picks from its own contents. `spare` holds 64·r words.
    private static func mix(_ x: UnsafeMutablePointer<UInt32>, r: Int, n: Int, table: UnsafeMutablePointer<UInt32>, spare: UnsafeMutablePointer<UInt32>) {
        let words = 32 * r
        for step in 0..<n {
            (table + step * words).update(from: x, count: words)
            blockMix(x, r: r, output: spare)
        }
        for _ in 0..<n {
            // Integerify: the first word of the last 64-byte block, modulo n (at most 2^32 here).
            let pick = Int(x[words - 16]) & (n - 1)
            let entry = table + pick * words
            for word in 0..<words { x[word] ^= entry[word] }
            blockMix(x, r: r, output: spare)
        }
    }

    /// BlockMix with Salsa20/8, in place on the 2·r 64-byte blocks at `b`; `output` is scratch of
    /// the same size. Even-numbered results go to the first half, odd to the second.
    private static func blockMix(_ b: UnsafeMutablePointer<UInt32>, r: Int, output: UnsafeMutablePointer<UInt32>) {
        var x = (b + (2 * r - 1) * 16).withMemoryRebound(to: SalsaBlock.self, capacity: 1) { $0.pointee }
        for index in 0..<(2 * r) {
            let input = b + index * 16
            x.xor(input)
            x.salsa20_8()
            let destination = output + ((index & 1) * r + index >> 1) * 16
            destination.withMemoryRebound(to: SalsaBlock.self, capacity: 1) { $0.pointee = x }
        }
        b.update(from: output, count: 32 * r)
    }
}

/// Sixteen words, held in locals so that the Salsa20/8 rounds run in registers.
private struct SalsaBlock {
    var w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, w10, w11, w12, w13, w14, w15: UInt32

    mutating func xor(_ other: UnsafeMutablePointer<UInt32>) {
        w0 ^= other[0]; w1 ^= other[1]; w2 ^= other[2]; w3 ^= other[3]
        w4 ^= other[4]; w5 ^= other[5]; w6 ^= other[6]; w7 ^= other[7]
        w8 ^= other[8]; w9 ^= other[9]; w10 ^= other[10]; w11 ^= other[11]
        w12 ^= other[12]; w13 ^= other[13]; w14 ^= other[14]; w15 ^= other[15]
    }

    /// The Salsa20/8 core (RFC 7914 §3): four double rounds, then the input added back.
    mutating func salsa20_8() {
        var (x0, x1, x2, x3, x4, x5, x6, x7) = (w0, w1, w2, w3, w4, w5, w6, w7)
        var (x8, x9, x10, x11, x12, x13, x14, x15) = (w8, w9, w10, w11, w12, w13, w14, w15)
        for _ in 0..<4 {
            // Columns.
            x4 ^= rotate(x0 &+ x12, 7); x8 ^= rotate(x4 &+ x0, 9); x12 ^= rotate(x8 &+ x4, 13); x0 ^= rotate(x12 &+ x8, 18)
            x9 ^= rotate(x5 &+ x1, 7); x13 ^= rotate(x9 &+ x5, 9); x1 ^= rotate(x13 &+ x9, 13); x5 ^= rotate(x1 &+ x13, 18)
            x14 ^= rotate(x10 &+ x6, 7); x2 ^= rotate(x14 &+ x10, 9); x6 ^= rotate(x2 &+ x14, 13); x10 ^= rotate(x6 &+ x2, 18)
            x3 ^= rotate(x15 &+ x11, 7); x7 ^= rotate(x3 &+ x15, 9); x11 ^= rotate(x7 &+ x3, 13); x15 ^= rotate(x11 &+ x7, 18)
            // Rows.
            x1 ^= rotate(x0 &+ x3, 7); x2 ^= rotate(x1 &+ x0, 9); x3 ^= rotate(x2 &+ x1, 13); x0 ^= rotate(x3 &+ x2, 18)
            x6 ^= rotate(x5 &+ x4, 7); x7 ^= rotate(x6 &+ x5, 9); x4 ^= rotate(x7 &+ x6, 13); x5 ^= rotate(x4 &+ x7, 18)
            x11 ^= rotate(x10 &+ x9, 7); x8 ^= rotate(x11 &+ x10, 9); x9 ^= rotate(x8 &+ x11, 13); x10 ^= rotate(x9 &+ x8, 18)
            x12 ^= rotate(x15 &+ x14, 7); x13 ^= rotate(x12 &+ x15, 9); x14 ^= rotate(x13 &+ x12, 13); x15 ^= rotate(x14 &+ x13, 18)
        }
        w0 &+= x0; w1 &+= x1; w2 &+= x2; w3 &+= x3; w4 &+= x4; w5 &+= x5; w6 &+= x6; w7 &+= x7
        w8 &+= x8; w9 &+= x9; w10 &+= x10; w11 &+= x11; w12 &+= x12; w13 &+= x13; w14 &+= x14; w15 &+= x15
    }

    @inline(__always)
    private func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 {
        value &<< count | value &>> (32 &- count)
    }
}

/// PBKDF2 (RFC 8018) with HMAC-SHA256, as scrypt uses it: one iteration.
package enum PBKDF2 {
    /// `length` bytes of PBKDF2-HMAC-SHA256 with one iteration. The key's HMAC state is set up
    /// once and copied per output block (CryptoKit's `HMAC` is a value type).
    static func sha256(password: [UInt8], salt: [UInt8], length: Int) -> [UInt8] {
        let keyed = BuckiaCrypto.HMAC<SHA256>(key: SymmetricKey(data: password))
        var output: [UInt8] = []
        output.reserveCapacity(length + 32)
        var index: UInt32 = 1
        while output.count < length {
            var block = keyed
            block.update(data: salt)
            block.update(data: withUnsafeBytes(of: index.bigEndian) { Array($0) })
            output.append(contentsOf: block.finalize())
            index &+= 1
        }
        return Array(output.prefix(length))
    }
}
