@testable import BuckiaSecurity
import BuckiaCore
import Foundation
import Testing

struct ScryptVector: Sendable, CustomTestStringConvertible {
    let password: String
    let salt: String
    let n: Int
    let r: Int
    let p: Int
    let key: String
    var testDescription: String { "N=\(n), r=\(r), p=\(p)" }
}

/// The Swift scrypt (CryptoKit has none) against RFC 7914's published answers.
struct ScryptTests {
    // RFC 7914 section 12, the first three vectors (the fourth takes 1 GiB).
    static let vectors: [ScryptVector] = [
        ScryptVector(
            password: "", salt: "", n: 16, r: 1, p: 1,
            key: "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"),
        ScryptVector(
            password: "password", salt: "NaCl", n: 1024, r: 8, p: 16,
            key: "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"),
        ScryptVector(
            password: "pleaseletmein", salt: "SodiumChloride", n: 16384, r: 8, p: 1,
            key: "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"),
    ]

    @Test("scrypt matches RFC 7914's test vectors", arguments: vectors)
    func rfc7914(vector: ScryptVector) throws {
        let key = try Scrypt.deriveKey(
            password: Array(vector.password.utf8), salt: Array(vector.salt.utf8), n: vector.n, r: vector.r, p: vector.p, length: 64)
        #expect(Hex.encode(key) == vector.key)
    }

    @Test("PBKDF2-HMAC-SHA256 with one iteration matches RFC 7914 section 11, at lengths that cut a block")
    func pbkdf2() {
        let expected = "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
        for length in [64, 33, 32, 1] {
            #expect(Hex.encode(PBKDF2.sha256(password: Array("passwd".utf8), salt: Array("salt".utf8), length: length)) == String(expected.prefix(2 * length)))
        }
    }

    @Test(
        "Parameters RFC 7914 rules out are refused, never run",
        arguments: [(0, 1, 1, 32), (1, 1, 1, 32), (24, 1, 1, 32), (16, 0, 1, 32), (16, 1, 0, 32), (16, 1, 1, 0), (1 << 40, 1 << 20, 1, 32), (16, 1 << 20, 1 << 10, 32)])
    func refused(n: Int, r: Int, p: Int, length: Int) {
        #expect(throws: BuckiaError.self) {
            try Scrypt.deriveKey(password: [1], salt: [2], n: n, r: r, p: p, length: length)
        }
    }

    @Test("The secret store's passphrase key is scrypt with its interactive costs, byte for byte")
    func passphraseKey() throws {
        let salt = Array("SodiumChloride".utf8)
        let key = try PassphraseKey.scrypt(Secret("pleaseletmein"), salt: salt, cost: PassphraseKey.ScryptCost(n: 16384, r: 8, p: 1))
        #expect(Hex.encode(key) == String(Self.vectors[2].key.prefix(64)))
    }
}
