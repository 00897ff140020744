import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// One published digest: `message` repeated `repetitions` times hashes to `digest`.
struct DigestVector: Sendable, CustomTestStringConvertible {
    let message: String
    let repetitions: Int
    let digest: String

    init(_ message: String, times repetitions: Int = 1, _ digest: String) {
        self.message = message
        self.repetitions = repetitions
        self.digest = digest
    }

    var input: Data { Data(String(repeating: message, count: repetitions).utf8) }

    var testDescription: String {
        let shown = message.count > 24 ? "\(message.prefix(24))…" : message
        return repetitions == 1 ? shown.debugDescription : "\(shown.debugDescription) × \(repetitions)"
    }
}

struct DigestTests {
    // RFC 1321 appendix A.5 (the MD5 test suite).
    static let md5Vectors: [DigestVector] = [
        DigestVector("", "d41d8cd98f00b204e9800998ecf8427e"),
        DigestVector("a", "0cc175b9c0f1b6a831c399e269772661"),
        DigestVector("abc", "900150983cd24fb0d6963f7d28e17f72"),
        DigestVector("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        DigestVector("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
        DigestVector("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
        DigestVector("1234567890", times: 8, "57edf4a22be3c955ac49da2e2107b67a"),
    ]

    // RFC 3174 section 7.3 (TEST1–TEST4, the last two repeated as the RFC says), and the
    // empty message from NIST CAVP SHA1ShortMsg.rsp (Len = 0).
    static let sha1Vectors: [DigestVector] = [
        DigestVector("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        DigestVector("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        DigestVector("a", times: 1_000_000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f"),
        DigestVector(
            "0123456701234567012345670123456701234567012345670123456701234567", times: 10,
            "dea356a2cddd90c7a7ecedc5ebb563934f460452"),
        DigestVector("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
    ]

    // FIPS 180-2 appendix B.1–B.3 ("abc", the 448-bit message, one million 'a'), and the
    // empty message from NIST CAVP SHA256ShortMsg.rsp (Len = 0).
    static let sha256Vectors: [DigestVector] = [
        DigestVector("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        DigestVector(
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        DigestVector("a", times: 1_000_000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
        DigestVector("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ]

    @Test("MD5 matches the RFC 1321 test suite", arguments: md5Vectors)
    func md5(vector: DigestVector) throws {
        let digest = try Hashing.digest(vector.input, .md5)
        #expect(digest.hex == vector.digest)
        #expect(digest.bytes.count == HashAlgorithm.md5.byteCount)
    }

    @Test("SHA-1 matches RFC 3174 and FIPS 180", arguments: sha1Vectors)
    func sha1(vector: DigestVector) throws {
        let digest = try Hashing.digest(vector.input, .sha1)
        #expect(digest.hex == vector.digest)
        #expect(digest.bytes.count == HashAlgorithm.sha1.byteCount)
    }

    @Test("SHA-256 matches FIPS 180-2 appendix B", arguments: sha256Vectors)
    func sha256(vector: DigestVector) throws {
        #expect(try Hashing.digest(vector.input, .sha256).hex == vector.digest)
        #expect(Hashing.sha256Hex(vector.input) == vector.digest)
    }

    /// RFC 3720 (iSCSI) B.4's CRC-32C examples, as the 4 big-endian bytes S3's
    /// `x-amz-checksum-crc32c` carries.
    @Test("CRC-32C digests match RFC 3720's examples", arguments: [
        ([UInt8](repeating: 0, count: 32), "8a9136aa"), ([UInt8](repeating: 0xFF, count: 32), "62a8ab43"),
        (Array(0..<32) as [UInt8], "46dd794e"), (Array((0..<32).reversed()) as [UInt8], "113fdb5c"), (Array("123456789".utf8), "e3069283"),
    ])
    func crc32c(_ input: [UInt8], _ expected: String) throws {
        #expect(try Hashing.digest(input, .crc32c).hex == expected)
    }

    @Test(
        "Streaming in odd-sized pieces gives the one-shot digest",
        arguments: HashAlgorithm.allCases, [1, 3, 7, 63, 64, 65, 1000, 65_537])
    func streaming(algorithm: HashAlgorithm, pieceSize: Int) throws {
        var generator = SeededBytes(seed: UInt64(pieceSize))
        let data = generator.data(count: 200_003)
        let hasher = try DigestHasher(algorithm)
        var offset = 0
        while offset < data.count {
            let end = min(offset + pieceSize, data.count)
            hasher.update(data[offset..<end])
            offset = end
        }
        #expect(try hasher.finalize() == Hashing.digest(data, algorithm))
    }

    @Test("A digest fed raw buffers and arrays equals one fed Data")
    func bufferOverloads() throws {
        let message = Array("abc".utf8)
        let hasher = try DigestHasher(.sha256)
        message.withUnsafeBytes { hasher.update($0) }
        hasher.update(UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(hasher.finalize().hex == Self.sha256Vectors[0].digest)
    }

    @Test("Hashing a multi-MiB file in one pass equals hashing its bytes", arguments: [0, 1, 5 * 1024 * 1024 + 17])
    func fileDigests(size: Int) throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        var generator = SeededBytes(seed: 42)
        let data = generator.data(count: size)
        let url = directory.file("input.bin")
        try data.write(to: url)

        let digests = try Hashing.digests(ofFile: url, HashAlgorithm.allCases)
        #expect(digests.count == HashAlgorithm.allCases.count)
        for algorithm in HashAlgorithm.allCases {
            #expect(try digests[algorithm] == Hashing.digest(data, algorithm), "\(algorithm)")
        }
    }

    @Test("Asking for the same algorithm twice computes it once")
    func duplicateAlgorithms() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let url = directory.file("abc.txt")
        try Data("abc".utf8).write(to: url)
        let digests = try Hashing.digests(ofFile: url, [.sha256, .md5, .sha256])
        #expect(digests.count == 2)
        #expect(digests[.sha256]?.hex == Self.sha256Vectors[0].digest)
    }

    @Test("Hashing a missing file fails with notFound naming the path")
    func missingFile() {
        let url = URL(fileURLWithPath: TestHome.empty + "/missing-\(UUID().uuidString)/file")
        let error = #expect(throws: BuckiaError.self) { try Hashing.digests(ofFile: url, [.sha256]) }
        #expect(error?.code == .notFound)
        #expect(error?.path == url.path)
    }

    @Test("Digests render as lowercase hex and standard Base64")
    func renderings() throws {
        let digest = try Hashing.digest(Data(), .md5)
        #expect(digest.description == "d41d8cd98f00b204e9800998ecf8427e")
        // The Content-MD5 of an empty body.
        #expect(digest.base64 == "1B2M2Y8AsgTpgAmY7PhCfg==")
        #expect(digest.data == Data(digest.bytes))
    }

    @Test(
        "Hex decodes either case and rejects what is not hex",
        arguments: [
            ("00ff10", [0x00, 0xff, 0x10] as [UInt8]?), ("ABcd", [0xab, 0xcd]), ("", []),
            ("abc", nil), ("zz", nil), ("0g", nil), ("é1", nil),
        ])
    func hexDecoding(text: String, expected: [UInt8]?) {
        #expect(Hex.decode(text) == expected)
        if let expected { #expect(Hex.encode(expected) == text.lowercased()) }
    }
}
