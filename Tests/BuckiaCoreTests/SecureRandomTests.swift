import BuckiaCore
import Foundation
import Testing

struct SecureRandomTests {
    @Test("Random bytes have the requested length", arguments: [0, 1, 12, 16, 32, 4096, 1 << 20])
    func length(count: Int) throws {
        #expect(try SecureRandom.bytes(count: count).count == count)
    }

    @Test("Two draws differ", arguments: [12, 16, 32])
    func draws(count: Int) throws {
        let first = try SecureRandom.bytes(count: count)
        let second = try SecureRandom.bytes(count: count)
        #expect(first != second)
    }

    @Test("A large draw is not all one value and uses every byte value")
    func spread() throws {
        // Each byte value is missing from 64 KiB of uniform bytes with probability about e^-256.
        let bytes = try SecureRandom.bytes(count: 65_536)
        #expect(Set(bytes).count == 256)
    }

    @Test("Nonces drawn for AES-GCM are distinct across many seals")
    func nonces() throws {
        let key = try SecureRandom.bytes(count: AESGCM.keyByteCount)
        var seen = Set<[UInt8]>()
        for _ in 0..<1_000 { seen.insert(try AESGCM.seal(Data(), key: key).nonce) }
        #expect(seen.count == 1_000)
    }

    @Test("A negative count is invalid configuration", arguments: [-1, Int.min])
    func negative(count: Int) {
        let error = #expect(throws: BuckiaError.self) { try SecureRandom.bytes(count: count) }
        #expect(error?.code == .invalidConfiguration)
    }
}
