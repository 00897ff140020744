internal import BuckiaCrypto
import Foundation

/// A hash function Buckia computes locally: MD5 and the SHAs through CryptoKit's API (CryptoKit
/// on Apple platforms, BuckiaCrypto's libcrypto implementation of that API elsewhere), CRC-32C with the processor's CRC instruction (the checksum S3's `x-amz-checksum-crc32c` and
/// Google Cloud Storage use; a digest of its 4 bytes, big-endian).
public enum HashAlgorithm: String, Sendable, CaseIterable, Codable {
    case md5, sha1, sha256, crc32c

    /// The digest length in bytes.
    public var byteCount: Int {
        switch self {
        case .md5: 16
        case .sha1: 20
        case .sha256: 32
        case .crc32c: 4
        }
    }
}

/// The output of a hash function or MAC.
public struct Digest: Hashable, Sendable, CustomStringConvertible {
    /// The raw digest bytes.
    public let bytes: [UInt8]

    /// Wraps raw digest bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Lowercase hexadecimal, as checksums are stored and compared.
    public var hex: String { Hex.encode(bytes) }

    /// Standard Base64, as in `Content-MD5` headers.
    public var base64: String { Data(bytes).base64EncodedString() }

    /// The digest as `Data`.
    public var data: Data { Data(bytes) }

    public var description: String { hex }
}

/// Computes a digest over data that arrives in pieces, with memory bounded by the pieces.
///
/// Not `Sendable`: one hasher belongs to one task.
public final class DigestHasher {
    /// The algorithm in use.
    public var algorithm: HashAlgorithm { running.algorithm }
    private var running: RunningDigest

    /// Starts a new digest.
    ///
    /// - Throws: Nothing today: every algorithm is computed in-process on every platform. The
    ///   signature keeps room for a build whose library refuses one (MD5 under FIPS rules).
    public init(_ algorithm: HashAlgorithm) throws {
        running = RunningDigest(algorithm)
    }

    /// Feeds bytes into the digest.
    public func update(_ buffer: UnsafeRawBufferPointer) {
        running.update(buffer)
    }

    /// Feeds bytes into the digest.
    public func update<Bytes: DataProtocol>(_ data: Bytes) {
        running.update(data)
    }

    /// Returns the digest of everything fed so far.
    public func finalize() -> Digest {
        running.finalize()
    }
}

/// One digest in progress, as a value: what ``DigestHasher`` and ``RunningDigests`` hold, and
/// what a `Sendable` owner (a stream's state behind a lock) can hold directly.
package struct RunningDigest: Sendable {
    package let algorithm: HashAlgorithm
    /// The running function. Mutated in place through the existential, so a hash function's
    /// state is never copied per update. CryptoKit's hash functions are `Sendable` values.
    private var function: any HashFunction

    package init(_ algorithm: HashAlgorithm) {
        self.algorithm = algorithm
        switch algorithm {
        case .md5: function = Insecure.MD5()
        case .sha1: function = Insecure.SHA1()
        case .sha256: function = SHA256()
        case .crc32c: function = CRC32CFunction()
        }
    }

    package mutating func update(_ buffer: UnsafeRawBufferPointer) {
        function.update(bufferPointer: buffer)
    }

    package mutating func update<Bytes: DataProtocol>(_ data: Bytes) {
        for region in data.regions {
            region.withUnsafeBytes { function.update(bufferPointer: $0) }
        }
    }

    package func finalize() -> Digest {
        Digest(bytes: function.finalize().withUnsafeBytes { Array($0) })
    }
}

/// Several digests of one stream in progress, as a value (see ``DigestSet``).
package struct RunningDigests: Sendable {
    private var digests: [RunningDigest]

    /// One digest for each distinct algorithm in `algorithms`.
    package init<Algorithms: Sequence>(_ algorithms: Algorithms) where Algorithms.Element == HashAlgorithm {
        var seen: Set<HashAlgorithm> = []
        digests = algorithms.filter { seen.insert($0).inserted }.map(RunningDigest.init)
    }

    package var isEmpty: Bool { digests.isEmpty }

    package mutating func update(_ buffer: UnsafeRawBufferPointer) {
        for index in digests.indices { digests[index].update(buffer) }
    }

    package mutating func update<Bytes: DataProtocol>(_ data: Bytes) {
        for index in digests.indices { digests[index].update(data) }
    }

    package func finalize() -> [HashAlgorithm: Digest] {
        Dictionary(uniqueKeysWithValues: digests.map { ($0.algorithm, $0.finalize()) })
    }
}

/// CRC-32C in CryptoKit's hash-function shape, so ``DigestHasher`` runs one kind of function:
/// the processor's CRC instruction through CChecksum, a digest of the 4 bytes big-endian.
struct CRC32CFunction: HashFunction {
    static let blockByteCount = 1
    private var crc: UInt32 = 0

    init() {}

    mutating func update(bufferPointer: UnsafeRawBufferPointer) {
        guard bufferPointer.count > 0 else { return }
        crc = CRC32C.checksum(bufferPointer, seed: crc)
    }

    func finalize() -> CRC32CDigest {
        CRC32CDigest(value: crc)
    }
}

/// The output of ``CRC32CFunction``.
struct CRC32CDigest: BuckiaCrypto.Digest {
    static let byteCount = 4
    let value: UInt32

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: value.bigEndian, body)
    }
}

/// Several digests of one stream of bytes, computed in one pass: the one hashing loop that
/// uploads, downloads, checksums and part copies share.
///
/// Not `Sendable`: one set belongs to one task.
public final class DigestSet {
    private var digests: RunningDigests

    /// Starts a digest for each distinct algorithm in `algorithms` (none is fine: then it
    /// only passes bytes by).
    ///
    /// - Throws: As ``DigestHasher/init(_:)``.
    public init<Algorithms: Sequence>(_ algorithms: Algorithms) throws where Algorithms.Element == HashAlgorithm {
        digests = RunningDigests(algorithms)
    }

    /// Whether there is anything to compute.
    public var isEmpty: Bool { digests.isEmpty }

    /// Feeds bytes into every digest.
    public func update(_ buffer: UnsafeRawBufferPointer) {
        digests.update(buffer)
    }

    /// Feeds bytes into every digest.
    public func update<Bytes: DataProtocol>(_ data: Bytes) {
        digests.update(data)
    }

    /// The digests of everything fed so far. The set cannot be used afterwards.
    public func finalize() -> [HashAlgorithm: Digest] {
        digests.finalize()
    }

    /// Checks the computed digests against checksums the caller expected.
    ///
    /// - Returns: The first algorithm whose digest differs, with the expected and actual hex.
    public static func firstMismatch(
        _ digests: [HashAlgorithm: Digest], expected: [ChecksumAlgorithm: String]
    ) -> (algorithm: ChecksumAlgorithm, expected: String, actual: String)? {
        for (algorithm, value) in expected.sorted(by: { $0.key < $1.key }) {
            guard let hash = algorithm.hashAlgorithm, let digest = digests[hash] else { continue }
            if digest.hex != value.lowercased() { return (algorithm, value, digest.hex) }
        }
        return nil
    }
}

extension DigestSet {
    /// Fails when `digests` miss a checksum in `known` (algorithms without a digest are not
    /// compared): what an upload checks before it stores anything.
    ///
    /// - Throws: ``BuckiaError/Code/checksumMismatch`` naming `key`.
    package static func check(_ digests: [HashAlgorithm: Digest], against known: [ChecksumAlgorithm: String], key: ObjectKey) throws {
        if let mismatch = firstMismatch(digests, expected: known) {
            throw BuckiaError.checksumMismatch(key, algorithm: mismatch.algorithm, expected: mismatch.expected, actual: mismatch.actual, operation: "upload")
        }
    }
}

/// One-shot hashing of bytes and files.
public enum Hashing {
    /// The digest of `data`.
    ///
    /// - Throws: As ``DigestHasher/init(_:)``.
    public static func digest<Bytes: DataProtocol>(_ data: Bytes, _ algorithm: HashAlgorithm) throws -> Digest {
        let hasher = try DigestHasher(algorithm)
        hasher.update(data)
        return hasher.finalize()
    }

    /// The SHA-256 of `data`.
    public static func sha256<Bytes: DataProtocol>(_ data: Bytes) -> Digest {
        Digest(bytes: Array(SHA256.hash(data: data)))
    }

    /// Lowercase hex SHA-256 of `data`.
    public static func sha256Hex<Bytes: DataProtocol>(_ data: Bytes) -> String {
        sha256(data).hex
    }

    /// Checks that the file at `file` holds bytes whose MD5 is `md5`, as the caller of a part
    /// upload promises, reading it once.
    ///
    /// - Throws: ``BuckiaError/Code/checksumMismatch`` naming `key` when it does not; the read's
    ///   failure, naming the file, when it cannot be read.
    package static func checkMD5(of file: URL, is md5: Digest, key: ObjectKey, operation: String) throws {
        let actual: Digest?
        do {
            actual = try digests(ofFile: file, [.md5])[.md5]
        } catch {
            throw BuckiaError.wrapping(error, operation: operation, path: file.path)
        }
        guard actual == md5 else {
            throw BuckiaError.checksumMismatch(key, algorithm: .md5, expected: md5.hex, actual: actual?.hex, operation: operation)
        }
    }

    /// The digests of a file, computed in one streaming pass through a fixed-size buffer.
    ///
    /// An algorithm listed more than once is computed once.
    public static func digests(ofFile url: URL, _ algorithms: [HashAlgorithm]) throws -> [HashAlgorithm: Digest] {
        let reader = try FileReader(url)
        return try reader.digests(of: 0..<reader.size(), algorithms)
    }

    /// The digests of an open file from its current offset to the end, in one streaming pass.
    package static func digests(of file: LocalFile, _ algorithms: [HashAlgorithm]) throws -> [HashAlgorithm: Digest] {
        let digests = try DigestSet(algorithms)
        try file.forEachChunk { digests.update($0) }
        return digests.finalize()
    }
}

/// Hexadecimal encoding and decoding.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`.
    public static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `text` is the lowercase hex of a digest of `length` bytes (`nil`: of any
    /// nonzero length): how a checksum from outside is checked before it is trusted.
    public static func isDigest(_ text: String, length: Int?) -> Bool {
        guard let length else { return !text.isEmpty && isLowercase(text) }
        return text.utf8.count == length * 2 && isLowercase(text)
    }

    private static func isLowercase(_ text: String) -> Bool {
        text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// The bytes of a hex string (either case), or nil if it is not hex.
    public static func decode(_ string: String) -> [UInt8]? {
        let chars = Array(string.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = value(chars[index]), let low = value(chars[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
