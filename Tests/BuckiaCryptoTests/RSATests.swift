import BuckiaCrypto
import Foundation
import Testing

@Suite("RSA public keys: RS256 signatures checked as RFC 8017 says")
struct RSATests {
    static func bytes(_ base64: String) throws -> [UInt8] {
        try #require(Data(base64Encoded: base64).map { Array($0) }, "bad base64 in a vector")
    }

    @Test("each vector's key encodes as its PKCS #1 DER and checks its own RS256 signature", arguments: RSAVector.all)
    func vector(_ vector: RSAVector) throws {
        let key = try RSAPublicKey(modulus: try Self.bytes(vector.modulus), exponent: try Self.bytes(vector.exponent))
        #expect(key.bitCount == vector.bits)
        #expect(key.pkcs1DERRepresentation == (try Self.bytes(vector.der)))
        let message = Array(vector.message.utf8)
        #expect(key.isValidPKCS1v15SHA256Signature(try Self.bytes(vector.signature), for: message))
        // A key given with leading zero bytes (as some JWKS publish `n`) is the same key.
        let padded = try RSAPublicKey(modulus: [0, 0] + (try Self.bytes(vector.modulus)), exponent: [0] + (try Self.bytes(vector.exponent)))
        #expect(padded == key)
        #expect(padded.isValidPKCS1v15SHA256Signature(try Self.bytes(vector.signature), for: message))
    }

    @Test("a signature RS256 must refuse is refused", arguments: RSAVector.all)
    func refusals(_ vector: RSAVector) throws {
        let key = try RSAPublicKey(modulus: try Self.bytes(vector.modulus), exponent: try Self.bytes(vector.exponent))
        let message = Array(vector.message.utf8)
        let signature = try Self.bytes(vector.signature)
        var cases: [(String, [UInt8], [UInt8])] = [
            ("PSS padding", try Self.bytes(vector.pss), message),
            ("SHA-1", try Self.bytes(vector.sha1), message),
            ("another message", signature, message + [0x21]),
            ("empty message", signature, []),
            ("truncated", Array(signature.dropLast()), message),
            ("one byte longer", [0] + signature, message),
            ("empty", [], message),
            ("all zeros", [UInt8](repeating: 0, count: signature.count), message),
            ("the modulus itself", try Self.bytes(vector.modulus), message),
            ("all ones (over the modulus)", [UInt8](repeating: 0xFF, count: signature.count), message),
        ]
        for index in [0, signature.count / 2, signature.count - 1] {
            var flipped = signature
            flipped[index] ^= 0x01
            cases.append(("bit flipped at byte \(index)", flipped, message))
        }
        for (name, candidate, text) in cases {
            #expect(!key.isValidPKCS1v15SHA256Signature(candidate, for: text), "\(vector.bits) bits: \(name) was accepted")
        }
        var nearby = try Self.bytes(vector.modulus)
        nearby[nearby.count - 1] ^= 0x02
        let other = try RSAPublicKey(modulus: nearby, exponent: try Self.bytes(vector.exponent))
        #expect(!other.isValidPKCS1v15SHA256Signature(signature, for: message), "a key of the same size with another modulus accepted the signature")
        let otherExponent = try RSAPublicKey(modulus: try Self.bytes(vector.modulus), exponent: vector.exponent == "Aw==" ? [1, 0, 1] : [3])
        #expect(!otherExponent.isValidPKCS1v15SHA256Signature(signature, for: message), "the modulus with another exponent accepted the signature")
    }

    struct BadKey: Sendable, CustomTestStringConvertible {
        let name: String, modulus: [UInt8], exponent: [UInt8]
        var testDescription: String { name }
    }

    static let odd2048 = [UInt8](repeating: 0xC5, count: 256)

    @Test("a key Buckia will not check signatures with is refused", arguments: [
        BadKey(name: "1024-bit modulus", modulus: [UInt8](repeating: 0xC5, count: 128), exponent: [1, 0, 1]),
        BadKey(name: "2047-bit modulus", modulus: [0x45] + [UInt8](repeating: 0xC5, count: 255), exponent: [1, 0, 1]),
        BadKey(name: "8200-bit modulus", modulus: [UInt8](repeating: 0xC5, count: 1025), exponent: [1, 0, 1]),
        BadKey(name: "zero modulus", modulus: [0, 0, 0], exponent: [1, 0, 1]),
        BadKey(name: "empty modulus", modulus: [], exponent: [1, 0, 1]),
        BadKey(name: "even modulus", modulus: [UInt8](repeating: 0xC4, count: 256), exponent: [1, 0, 1]),
        BadKey(name: "exponent 1", modulus: odd2048, exponent: [1]),
        BadKey(name: "exponent 0", modulus: odd2048, exponent: [0]),
        BadKey(name: "empty exponent", modulus: odd2048, exponent: []),
        BadKey(name: "even exponent", modulus: odd2048, exponent: [1, 0, 0]),
        BadKey(name: "33-bit exponent", modulus: odd2048, exponent: [1, 0, 0, 0, 1]),
    ])
    func badKeys(_ bad: BadKey) {
        #expect(throws: RSAKeyRefusal.self) { try RSAPublicKey(modulus: bad.modulus, exponent: bad.exponent) }
    }

    @Test("the smallest and largest accepted keys, and exponent 3, are keys")
    func boundaries() throws {
        #expect(try RSAPublicKey(modulus: [0x80] + [UInt8](repeating: 0xC5, count: 255), exponent: [3]).bitCount == 2048)
        #expect(try RSAPublicKey(modulus: [UInt8](repeating: 0xC5, count: 1024), exponent: [0xFF, 0xFF, 0xFF, 0xFF]).bitCount == 8192)
    }
}
