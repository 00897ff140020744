import BuckiaCore
import Foundation
import Testing

/// One known answer: key, nonce, plaintext and AAD in, ciphertext and tag out (all hex).
struct GCMVector: Sendable, CustomTestStringConvertible {
    let name: String
    let key: String
    let nonce: String
    let plaintext: String
    let aad: String
    let ciphertext: String
    let tag: String

    var testDescription: String { name }
}

/// Which part of a sealed message a tampering test flips a bit in.
enum TamperedPart: String, Sendable, CaseIterable {
    case ciphertext, tag, nonce, aad
}

struct AESGCMTests {
    private static let zeroKey = String(repeating: "00", count: 32)
    private static let key15 = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
    private static let plaintext15 =
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
        + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
    private static let ciphertext15 =
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
        + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad"

    // McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", the NIST GCM
    // specification, appendix B: test cases 13–16 (AES-256, 96-bit IV). Case 16 is case 15
    // with the last 4 plaintext bytes dropped and 20 bytes of AAD added.
    static let vectors: [GCMVector] = [
        GCMVector(
            name: "test case 13 (empty)", key: zeroKey, nonce: String(repeating: "00", count: 12),
            plaintext: "", aad: "", ciphertext: "", tag: "530f8afbc74536b9a963b4f1c4cb738b"),
        GCMVector(
            name: "test case 14 (one zero block)", key: zeroKey, nonce: String(repeating: "00", count: 12),
            plaintext: String(repeating: "00", count: 16), aad: "",
            ciphertext: "cea7403d4d606b6e074ec5d3baf39d18", tag: "d0d1c8a799996bf0265b98b5d48ab919"),
        GCMVector(
            name: "test case 15 (64 bytes, no AAD)", key: key15, nonce: "cafebabefacedbaddecaf888",
            plaintext: plaintext15, aad: "", ciphertext: ciphertext15, tag: "b094dac5d93471bdec1a502270e3cc6c"),
        GCMVector(
            name: "test case 16 (60 bytes, 20 bytes AAD)", key: key15, nonce: "cafebabefacedbaddecaf888",
            plaintext: String(plaintext15.dropLast(8)), aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
            ciphertext: String(ciphertext15.dropLast(8)), tag: "76fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    @Test("Sealing matches the GCM specification's AES-256 test cases", arguments: vectors)
    func knownAnswers(vector: GCMVector) throws {
        let key = bytes(hex: vector.key)
        let box = try AESGCM.seal(
            bytes(hex: vector.plaintext), key: key, nonce: bytes(hex: vector.nonce),
            authenticating: bytes(hex: vector.aad))
        #expect(Hex.encode(box.ciphertext) == vector.ciphertext)
        #expect(Hex.encode(box.tag) == vector.tag)
        #expect(Hex.encode(box.combined) == vector.nonce + vector.ciphertext + vector.tag)

        let opened = try AESGCM.open(
            AESGCM.SealedBox(combined: box.combined), key: key, authenticating: bytes(hex: vector.aad))
        #expect(Hex.encode(opened) == vector.plaintext)
    }

    @Test("A random nonce round-trips any length", arguments: [0, 1, 15, 16, 17, 1000, 1 << 20])
    func roundTrip(length: Int) throws {
        var generator = SeededBytes(seed: UInt64(length))
        let plaintext = generator.data(count: length)
        let aad = Data("header v1".utf8)
        let key = try SecureRandom.bytes(count: AESGCM.keyByteCount)
        let box = try AESGCM.seal(plaintext, key: key, authenticating: aad)
        #expect(box.nonce.count == AESGCM.nonceByteCount)
        #expect(box.tag.count == AESGCM.tagByteCount)
        #expect(box.combined.count == length + AESGCM.nonceByteCount + AESGCM.tagByteCount)
        let opened = try AESGCM.open(AESGCM.SealedBox(combined: box.combined), key: key, authenticating: aad)
        #expect(opened == plaintext)
    }

    @Test("Two seals of the same message draw different nonces")
    func freshNonces() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let first = try AESGCM.seal(Data("same".utf8), key: key)
        let second = try AESGCM.seal(Data("same".utf8), key: key)
        #expect(first.nonce != second.nonce)
        #expect(first.combined != second.combined)
    }

    @Test("A flipped bit anywhere fails authentication as corrupt", arguments: TamperedPart.allCases, [0, 5, 7])
    func tampering(part: TamperedPart, bit: Int) throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        var aad = Array("aad".utf8)
        var box = try AESGCM.seal(Data("attack at dawn".utf8), key: key, authenticating: aad)
        switch part {
        case .ciphertext: box.ciphertext[3] ^= 1 << bit
        case .tag: box.tag[15] ^= 1 << bit
        case .nonce: box.nonce[0] ^= 1 << bit
        case .aad: aad[1] ^= 1 << bit
        }
        let error = #expect(throws: BuckiaError.self) { try AESGCM.open(box, key: key, authenticating: aad) }
        #expect(error?.code == .corrupt)
    }

    @Test("The wrong key fails as corrupt; missing AAD fails too")
    func wrongKeyOrAAD() throws {
        let box = try AESGCM.seal(Data("x".utf8), key: [UInt8](repeating: 1, count: 32), authenticating: Data("a".utf8))
        let wrongKey = #expect(throws: BuckiaError.self) { try AESGCM.open(box, key: [UInt8](repeating: 2, count: 32)) }
        #expect(wrongKey?.code == .corrupt)
        let noAAD = #expect(throws: BuckiaError.self) { try AESGCM.open(box, key: [UInt8](repeating: 1, count: 32)) }
        #expect(noAAD?.code == .corrupt)
    }

    @Test("A key that is not 32 bytes is invalid configuration", arguments: [0, 1, 16, 24, 31, 33, 64])
    func wrongKeyLength(length: Int) throws {
        let key = [UInt8](repeating: 9, count: length)
        let sealing = #expect(throws: BuckiaError.self) { try AESGCM.seal(Data("x".utf8), key: key) }
        #expect(sealing?.code == .invalidConfiguration)
        let box = try AESGCM.seal(Data("x".utf8), key: [UInt8](repeating: 9, count: 32))
        let opening = #expect(throws: BuckiaError.self) { try AESGCM.open(box, key: key) }
        #expect(opening?.code == .invalidConfiguration)
    }

    @Test("Sealing with a nonce that is not 12 bytes is invalid configuration", arguments: [0, 8, 11, 13, 16])
    func wrongNonceLength(length: Int) {
        let error = #expect(throws: BuckiaError.self) {
            try AESGCM.seal(Data("x".utf8), key: [UInt8](repeating: 9, count: 32), nonce: [UInt8](repeating: 0, count: length))
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("Opening a box with a malformed nonce or tag is corrupt", arguments: [(11, 16), (13, 16), (12, 15), (12, 0)])
    func malformedBox(nonceLength: Int, tagLength: Int) {
        let box = AESGCM.SealedBox(
            nonce: [UInt8](repeating: 0, count: nonceLength), ciphertext: [1, 2, 3],
            tag: [UInt8](repeating: 0, count: tagLength))
        let error = #expect(throws: BuckiaError.self) { try AESGCM.open(box, key: [UInt8](repeating: 9, count: 32)) }
        #expect(error?.code == .corrupt)
    }
}
