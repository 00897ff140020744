import BuckiaCore
import Foundation
import Testing

/// One published MAC: key and data as hex, the expected MAC (or its published prefix).
struct MACVector: Sendable, CustomTestStringConvertible {
    let name: String
    let key: String
    let data: String
    let mac: String

    var testDescription: String { name }
}

private func hex(_ text: String) -> String { Hex.encode(Array(text.utf8)) }

struct HMACTests {
    // RFC 4231 section 4, test cases 1–7 (HMAC-SHA-256). Case 5 publishes only the
    // first 128 bits of the MAC.
    static let rfc4231: [MACVector] = [
        MACVector(
            name: "case 1", key: String(repeating: "0b", count: 20), data: hex("Hi There"),
            mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        MACVector(
            name: "case 2", key: hex("Jefe"), data: hex("what do ya want for nothing?"),
            mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        MACVector(
            name: "case 3", key: String(repeating: "aa", count: 20), data: String(repeating: "dd", count: 50),
            mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        MACVector(
            name: "case 4", key: "0102030405060708090a0b0c0d0e0f10111213141516171819",
            data: String(repeating: "cd", count: 50),
            mac: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        MACVector(
            name: "case 5 (truncated to 128 bits)", key: String(repeating: "0c", count: 20),
            data: hex("Test With Truncation"), mac: "a3b6167473100ee06e0c796c2955552b"),
        MACVector(
            name: "case 6", key: String(repeating: "aa", count: 131),
            data: hex("Test Using Larger Than Block-Size Key - Hash Key First"),
            mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        MACVector(
            name: "case 7", key: String(repeating: "aa", count: 131),
            data: hex(
                "This is a test using a larger than block-size key and a larger than block-size data. "
                    + "The key needs to be hashed before being used by the HMAC algorithm."),
            mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test("HMAC-SHA256 matches RFC 4231 test cases 1–7", arguments: rfc4231)
    func matchesRFC4231(vector: MACVector) {
        let mac = HMAC.sha256(key: bytes(hex: vector.key), message: bytes(hex: vector.data))
        #expect(mac.bytes.count == 32)
        // Case 5 is published truncated; every other case is compared whole.
        #expect(mac.hex.hasPrefix(vector.mac))
        if vector.mac.count == 64 { #expect(mac.hex == vector.mac) }
    }

    // RFC 2202 sections 2 and 3, test cases 1 and 2 (HMAC-MD5 and HMAC-SHA-1).
    static let rfc2202: [(HashAlgorithm, MACVector)] = [
        (.md5, MACVector(name: "MD5 case 1", key: String(repeating: "0b", count: 16), data: hex("Hi There"),
                         mac: "9294727a3638bb1c13f48ef8158bfc9d")),
        (.md5, MACVector(name: "MD5 case 2", key: hex("Jefe"), data: hex("what do ya want for nothing?"),
                         mac: "750c783e6ab0b503eaa86e310a5db738")),
        (.sha1, MACVector(name: "SHA-1 case 1", key: String(repeating: "0b", count: 20), data: hex("Hi There"),
                          mac: "b617318655057264e28bc0b6fb378c8ef146be00")),
        (.sha1, MACVector(name: "SHA-1 case 2", key: hex("Jefe"), data: hex("what do ya want for nothing?"),
                          mac: "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")),
    ]

    @Test("HMAC-MD5 and HMAC-SHA1 match RFC 2202", arguments: rfc2202)
    func matchesRFC2202(algorithm: HashAlgorithm, vector: MACVector) throws {
        let mac = try HMAC.authenticationCode(algorithm, key: bytes(hex: vector.key), message: bytes(hex: vector.data))
        #expect(mac.hex == vector.mac)
    }

    @Test("HMAC over a checksum is refused, not computed")
    func crcIsNotAHash() {
        let error = #expect(throws: BuckiaError.self) { try HMAC.authenticationCode(.crc32c, key: [1], message: [2]) }
        #expect(error?.code == .unsupported)
    }

    // Wikipedia's "HMAC" article examples; the empty key and message exercise the
    // zero-length buffers an empty Swift array hands to C.
    @Test(
        "HMAC-SHA256 handles empty keys and messages",
        arguments: [
            ("", "", "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"),
            ("key", "The quick brown fox jumps over the lazy dog",
             "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"),
        ])
    func emptyInputs(key: String, message: String, mac: String) {
        #expect(HMAC.sha256(key: Data(key.utf8), message: Data(message.utf8)).hex == mac)
        #expect(HMAC.sha256(key: Array(key.utf8), message: Array(message.utf8)).hex == mac)
    }

    @Test(
        "Constant-time comparison agrees with ordinary equality",
        arguments: [
            ([], [], true), ([1, 2, 3], [1, 2, 3], true), ([1, 2, 3], [1, 2, 4], false),
            ([0, 2, 3], [1, 2, 3], false), ([1, 2], [1, 2, 3], false), ([1], [], false),
        ] as [([UInt8], [UInt8], Bool)])
    func constantTimeEquals(lhs: [UInt8], rhs: [UInt8], equal: Bool) {
        #expect(HMAC.constantTimeEquals(lhs, rhs) == equal)
        #expect(HMAC.constantTimeEquals(rhs, lhs) == equal)
    }
}
