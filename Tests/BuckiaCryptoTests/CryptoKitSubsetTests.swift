import BuckiaCrypto
import Foundation
import Testing

// These tests name only CryptoKit's API, so the same file checks three implementations of it:
// BuckiaCrypto over libcrypto (here, in `Tools/test`), swift-crypto's BoringSSL (Tools/check/cryptokit-check
// compiles and runs this file against it), and CryptoKit itself on a Mac.

/// Bytes from hex; a test vector that is not hex fails the test that reads it.
func unhex(_ text: String) throws -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) ?? text.endIndex
        bytes.append(try #require(UInt8(text[index..<next], radix: 16), "not hex: \(text)"))
        index = next
    }
    return bytes
}

func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
    bytes.map { String(format: "%02x", $0) }.joined()
}

struct HashVector: Sendable, CustomTestStringConvertible {
    let input: String
    let repeats: Int
    let digest: String
    init(_ input: String, times repeats: Int = 1, _ digest: String) {
        self.input = input
        self.repeats = repeats
        self.digest = digest
    }
    var testDescription: String { "\(input.prefix(20).debugDescription)×\(repeats)" }
    var bytes: [UInt8] { Array(String(repeating: input, count: repeats).utf8) }
}

struct HashFunctionTests {
    // FIPS 180-2 appendix B.1–B.3 and the empty string.
    static let sha256Vectors: [HashVector] = [
        HashVector("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        HashVector("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        HashVector("a", times: 1_000_000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
        HashVector("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ]
    // RFC 1321 appendix A.5.
    static let md5Vectors: [HashVector] = [
        HashVector("", "d41d8cd98f00b204e9800998ecf8427e"),
        HashVector("abc", "900150983cd24fb0d6963f7d28e17f72"),
        HashVector("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        HashVector("1234567890", times: 8, "57edf4a22be3c955ac49da2e2107b67a"),
    ]
    // RFC 3174 section 7.3.
    static let sha1Vectors: [HashVector] = [
        HashVector("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        HashVector("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        HashVector("a", times: 1_000_000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f"),
    ]

    @Test("SHA256 matches FIPS 180-2, in one call and fed in uneven pieces", arguments: sha256Vectors)
    func sha256(vector: HashVector) {
        #expect(hex(SHA256.hash(data: vector.bytes)) == vector.digest)
        #expect(hex(Self.inPieces(SHA256.self, vector.bytes)) == vector.digest)
        #expect(SHA256.Digest.byteCount == 32)
    }

    @Test("Insecure.MD5 matches RFC 1321", arguments: md5Vectors)
    func md5(vector: HashVector) {
        #expect(hex(Insecure.MD5.hash(data: vector.bytes)) == vector.digest)
        #expect(hex(Self.inPieces(Insecure.MD5.self, vector.bytes)) == vector.digest)
    }

    @Test("Insecure.SHA1 matches RFC 3174", arguments: sha1Vectors)
    func sha1(vector: HashVector) {
        #expect(hex(Insecure.SHA1.hash(data: vector.bytes)) == vector.digest)
        #expect(hex(Self.inPieces(Insecure.SHA1.self, vector.bytes)) == vector.digest)
    }

    /// Feeds `bytes` in pieces of 1, 2, 3, … bytes through `update(bufferPointer:)`.
    static func inPieces<H: HashFunction>(_: H.Type, _ bytes: [UInt8]) -> H.Digest {
        var function = H()
        var offset = 0
        var size = 1
        bytes.withUnsafeBytes { buffer in
            while offset < buffer.count {
                let end = min(buffer.count, offset + size)
                function.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[offset..<end]))
                offset = end
                size += 1
            }
        }
        return function.finalize()
    }

    @Test("A hash function is a value: a copy goes on from the state it was copied in, and finalize leaves the original usable")
    func valueSemantics() {
        var first = SHA256()
        first.update(data: Array("ab".utf8))
        var second = first
        first.update(data: Array("c".utf8))
        let abc = first.finalize()
        #expect(first.finalize() == abc)
        second.update(data: Array("d".utf8))
        #expect(abc == SHA256.hash(data: Array("abc".utf8)))
        #expect(second.finalize() == SHA256.hash(data: Array("abd".utf8)))
        #expect(abc != second.finalize())
    }

    @Test("Digests compare by their bytes, and against the bytes themselves")
    func digestEquality() throws {
        let digest = SHA256.hash(data: Array("abc".utf8))
        #expect(digest == (try unhex(Self.sha256Vectors[0].digest)))
        #expect(!(digest == (try unhex(Self.sha256Vectors[1].digest))))
        #expect(Set([digest, SHA256.hash(data: Array("abc".utf8))]).count == 1)
        #expect(Array(digest).count == 32)
    }
}

struct MACVector: Sendable, CustomTestStringConvertible {
    let name: String
    let key: String
    let data: String
    let mac: String
    var testDescription: String { name }
}

struct HMACTests {
    static func text(_ string: String) -> String { hex(Array(string.utf8)) }

    // RFC 4231 section 4, test cases 1–4, 6 and 7 (case 5 publishes only a truncated MAC).
    static let rfc4231: [MACVector] = [
        MACVector(name: "case 1", key: String(repeating: "0b", count: 20), data: text("Hi There"),
                  mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        MACVector(name: "case 2", key: text("Jefe"), data: text("what do ya want for nothing?"),
                  mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        MACVector(name: "case 3", key: String(repeating: "aa", count: 20), data: String(repeating: "dd", count: 50),
                  mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        MACVector(name: "case 4", key: "0102030405060708090a0b0c0d0e0f10111213141516171819", data: String(repeating: "cd", count: 50),
                  mac: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        MACVector(name: "case 6 (key longer than a block)", key: String(repeating: "aa", count: 131),
                  data: text("Test Using Larger Than Block-Size Key - Hash Key First"),
                  mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        MACVector(name: "case 7", key: String(repeating: "aa", count: 131),
                  data: text("This is a test using a larger than block-size key and a larger than block-size data. "
                      + "The key needs to be hashed before being used by the HMAC algorithm."),
                  mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test("HMAC<SHA256> matches RFC 4231", arguments: rfc4231)
    func sha256(vector: MACVector) throws {
        let key = SymmetricKey(data: try unhex(vector.key))
        let data = try unhex(vector.data)
        let mac = HMAC<SHA256>.authenticationCode(for: data, using: key)
        #expect(hex(mac) == vector.mac)
        #expect(mac.byteCount == 32)
        // Fed in two pieces, the code is the same.
        var split = HMAC<SHA256>(key: key)
        split.update(data: data.prefix(data.count / 2))
        split.update(data: data.dropFirst(data.count / 2))
        #expect(split.finalize() == mac)
        #expect(HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: data, using: key))
        #expect(HMAC<SHA256>.isValidAuthenticationCode(try unhex(vector.mac), authenticating: data, using: key))
        #expect(!HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: data + [0], using: key))
        var wrong = try unhex(vector.mac)
        wrong[31] ^= 1
        #expect(!HMAC<SHA256>.isValidAuthenticationCode(wrong, authenticating: data, using: key))
    }

    @Test("HMAC<Insecure.MD5> and HMAC<Insecure.SHA1> match RFC 2202's first two cases")
    func rfc2202() throws {
        let key1 = SymmetricKey(data: [UInt8](repeating: 0x0b, count: 16))
        #expect(hex(HMAC<Insecure.MD5>.authenticationCode(for: Array("Hi There".utf8), using: key1)) == "9294727a3638bb1c13f48ef8158bfc9d")
        let jefe = SymmetricKey(data: Array("Jefe".utf8))
        let question = Array("what do ya want for nothing?".utf8)
        #expect(hex(HMAC<Insecure.MD5>.authenticationCode(for: question, using: jefe)) == "750c783e6ab0b503eaa86e310a5db738")
        let key20 = SymmetricKey(data: [UInt8](repeating: 0x0b, count: 20))
        #expect(hex(HMAC<Insecure.SHA1>.authenticationCode(for: Array("Hi There".utf8), using: key20)) == "b617318655057264e28bc0b6fb378c8ef146be00")
        #expect(hex(HMAC<Insecure.SHA1>.authenticationCode(for: question, using: jefe)) == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
    }
}

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

struct AESGCMTests {
    static let key15 = "feffe9928665731c6d6a8f9467308308"
    static let plaintext15 = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
        + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"

    // McGrew & Viega, "The Galois/Counter Mode of Operation", appendix B: test cases 2–4
    // (AES-128) and 14–16 (AES-256).
    static let vectors: [GCMVector] = [
        GCMVector(name: "case 2 (AES-128, one zero block)", key: String(repeating: "00", count: 16), nonce: String(repeating: "00", count: 12),
                  plaintext: String(repeating: "00", count: 16), aad: "", ciphertext: "0388dace60b6a392f328c2b971b2fe78",
                  tag: "ab6e47d42cec13bdf53a67b21257bddf"),
        GCMVector(name: "case 3 (AES-128, 64 bytes)", key: key15, nonce: "cafebabefacedbaddecaf888", plaintext: plaintext15, aad: "",
                  ciphertext: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
                  tag: "4d5c2af327cd64a62cf35abd2ba6fab4"),
        GCMVector(name: "case 4 (AES-128, 60 bytes, 20 bytes of AAD)", key: key15, nonce: "cafebabefacedbaddecaf888",
                  plaintext: String(plaintext15.dropLast(8)), aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
                  ciphertext: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
                  tag: "5bc94fbc3221a5db94fae95ae7121a47"),
        GCMVector(name: "case 14 (AES-256, one zero block)", key: String(repeating: "00", count: 32), nonce: String(repeating: "00", count: 12),
                  plaintext: String(repeating: "00", count: 16), aad: "", ciphertext: "cea7403d4d606b6e074ec5d3baf39d18",
                  tag: "d0d1c8a799996bf0265b98b5d48ab919"),
        GCMVector(name: "case 15 (AES-256, 64 bytes)", key: key15 + key15, nonce: "cafebabefacedbaddecaf888", plaintext: plaintext15, aad: "",
                  ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
                  tag: "b094dac5d93471bdec1a502270e3cc6c"),
        GCMVector(name: "case 16 (AES-256, 60 bytes, 20 bytes of AAD)", key: key15 + key15, nonce: "cafebabefacedbaddecaf888",
                  plaintext: String(plaintext15.dropLast(8)), aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
                  ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
                  tag: "76fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    @Test("AES.GCM seals and opens the GCM specification's test cases", arguments: vectors)
    func knownAnswers(vector: GCMVector) throws {
        let key = SymmetricKey(data: try unhex(vector.key))
        let aad = try unhex(vector.aad)
        let box = try AES.GCM.seal(try unhex(vector.plaintext), using: key, nonce: AES.GCM.Nonce(data: try unhex(vector.nonce)), authenticating: aad)
        #expect(hex(box.ciphertext) == vector.ciphertext)
        #expect(hex(box.tag) == vector.tag)
        #expect(hex(try #require(box.combined)) == vector.nonce + vector.ciphertext + vector.tag)
        let reopened = try AES.GCM.SealedBox(combined: try unhex(vector.nonce + vector.ciphertext + vector.tag))
        #expect(hex(try AES.GCM.open(reopened, using: key, authenticating: aad)) == vector.plaintext)
        if aad.isEmpty {
            #expect(hex(try AES.GCM.open(reopened, using: key)) == vector.plaintext)
        }
    }

    @Test("A changed byte anywhere in the box, the AAD or the key fails authentication", arguments: ["ciphertext", "tag", "nonce", "aad", "key"])
    func tampering(part: String) throws {
        let key = try unhex(String(repeating: "42", count: 32))
        let aad = Array("header".utf8)
        let box = try AES.GCM.seal(Array("attack at dawn".utf8), using: SymmetricKey(data: key), authenticating: aad)
        var combined = Array(try #require(box.combined))
        var openAAD = aad
        var openKey = key
        switch part {
        case "ciphertext": combined[12] ^= 1
        case "tag": combined[combined.count - 1] ^= 0x80
        case "nonce": combined[0] ^= 1
        case "aad": openAAD[0] ^= 1
        default: openKey[31] ^= 1
        }
        let tampered = try AES.GCM.SealedBox(combined: combined)
        let error = #expect(throws: (any Error).self) {
            try AES.GCM.open(tampered, using: SymmetricKey(data: openKey), authenticating: openAAD)
        }
        #if !BUCKIA_SWIFT_CRYPTO
        // CryptoKit and BuckiaCrypto say which check failed; swift-crypto's BoringSSL backend
        // throws an error of its own, so callers must not rely on the type.
        #expect(error as? CryptoKitError == .authenticationFailure)
        #endif
    }

    @Test("Sizes outside what AES-GCM takes are refused with CryptoKit's errors")
    func sizes() throws {
        #expect(throws: CryptoKitError.incorrectKeySize) { try AES.GCM.seal([1, 2, 3], using: SymmetricKey(data: [UInt8](repeating: 0, count: 20))) }
        #expect(throws: CryptoKitError.incorrectParameterSize) { try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 11)) }
        #expect(throws: CryptoKitError.incorrectParameterSize) { try AES.GCM.SealedBox(combined: [UInt8](repeating: 0, count: 27)) }
        let nonce = AES.GCM.Nonce()
        #expect(throws: CryptoKitError.incorrectParameterSize) { try AES.GCM.SealedBox(nonce: nonce, ciphertext: [1], tag: [UInt8](repeating: 0, count: 15)) }
        // A random nonce is 12 bytes, and two are not the same.
        #expect(Array(nonce).count == 12)
        #expect(Array(nonce) != Array(AES.GCM.Nonce()))
        // A box of 28 bytes is an empty message.
        let empty = try AES.GCM.seal([UInt8](), using: SymmetricKey(size: .bits256))
        #expect(try #require(empty.combined).count == 28)
    }
}

struct SignatureVector: Sendable, CustomTestStringConvertible {
    let name: String
    let secret: String
    let publicKey: String
    let message: String
    let signature: String
    var testDescription: String { name }
}

struct Curve25519SigningTests {
    // RFC 8032 section 7.1, TEST 1–3.
    static let vectors: [SignatureVector] = [
        SignatureVector(
            name: "TEST 1 (empty message)", secret: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            publicKey: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", message: "",
            signature: "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        SignatureVector(
            name: "TEST 2 (1 byte)", secret: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            publicKey: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", message: "72",
            signature: "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        SignatureVector(
            name: "TEST 3 (2 bytes)", secret: "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            publicKey: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", message: "af82",
            signature: "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
    ]

    @Test("Curve25519.Signing matches RFC 8032: public key, signature, verification", arguments: vectors)
    func rfc8032(vector: SignatureVector) throws {
        let key = try Curve25519.Signing.PrivateKey(rawRepresentation: try unhex(vector.secret))
        #expect(hex(key.rawRepresentation) == vector.secret)
        #expect(hex(key.publicKey.rawRepresentation) == vector.publicKey)
        let message = try unhex(vector.message)
        let signature = try key.signature(for: message)
        #expect(signature.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(key.publicKey.isValidSignature(try unhex(vector.signature), for: message))
        #if !canImport(CryptoKit)
        // libcrypto and BoringSSL sign deterministically, as RFC 8032 specifies; Apple's
        // CryptoKit adds randomness, so only there do the bytes differ from the RFC's.
        #expect(hex(signature) == vector.signature)
        #endif
        var altered = try unhex(vector.signature)
        altered[10] ^= 1
        #expect(!key.publicKey.isValidSignature(altered, for: message))
        #expect(!key.publicKey.isValidSignature(try unhex(vector.signature), for: message + [0]))
        #expect(!key.publicKey.isValidSignature(try unhex(vector.signature).dropLast(), for: message))
    }

    @Test("A key of the wrong length is refused with incorrectKeySize")
    func keySizes() {
        #expect(throws: CryptoKitError.incorrectKeySize) { try Curve25519.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: CryptoKitError.incorrectKeySize) { try Curve25519.Signing.PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 33)) }
    }
}

struct SymmetricKeyTests {
    @Test("A random key has the size asked for, and two are different", arguments: [128, 192, 256, 8, 1024])
    func randomKeys(bits: Int) {
        let size = SymmetricKeySize(bitCount: bits)
        let first = SymmetricKey(size: size)
        #expect(first.bitCount == bits)
        #expect(first.withUnsafeBytes { $0.count } == bits / 8)
        if bits >= 128 { #expect(first != SymmetricKey(size: size)) }
        #expect(first == SymmetricKey(data: first.withUnsafeBytes { Array($0) }))
    }

    #if !canImport(CryptoKit) && !BUCKIA_SWIFT_CRYPTO
    // CryptoKit and swift-crypto trap on these sizes; the libcrypto subset rounds instead.
    @Test("A size that is not whole positive bytes makes a key rounded up, or an empty one, and never traps", arguments: [(12, 2), (1, 1), (0, 0), (-8, 0)])
    func oddSizes(bits: Int, bytes: Int) {
        #expect(SymmetricKey(size: SymmetricKeySize(bitCount: bits)).withUnsafeBytes { $0.count } == bytes)
    }
    #endif
}
