import COpenSSL
import Foundation

/// A hash function Buckia computes locally: MD5 and the SHAs through OpenSSL's libcrypto,
/// CRC-32C with the processor's CRC instruction (the checksum S3's `x-amz-checksum-crc32c` and
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

    /// OpenSSL's implementation, or nil for CRC-32C, which is not a libcrypto digest.
    var evp: OpaquePointer? {
        switch self {
        case .md5: EVP_md5()
        case .sha1: EVP_sha1()
        case .sha256: EVP_sha256()
        case .crc32c: nil
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
    public let algorithm: HashAlgorithm
    private enum State {
        case openSSL(OpaquePointer)
        case crc32c(UInt32)
    }
    private var state: State

    /// Starts a new digest.
    ///
    /// - Throws: ``BuckiaError/Code/unsupported`` when OpenSSL refuses the algorithm (MD5 in
    ///   FIPS mode) or cannot allocate a context.
    public init(_ algorithm: HashAlgorithm) throws {
        self.algorithm = algorithm
        guard let evp = algorithm.evp else {
            state = .crc32c(0)
            return
        }
        guard let context = EVP_MD_CTX_new() else {
            throw BuckiaError(.io, "OpenSSL could not allocate a \(algorithm) digest context; the process is out of memory.", operation: "hash")
        }
        guard EVP_DigestInit_ex(context, evp, nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw BuckiaError(
                .unsupported,
                "OpenSSL refused to compute \(algorithm) (it does in FIPS mode for MD5); use a provider or option that does not need it.",
                operation: "hash")
        }
        state = .openSSL(context)
    }

    deinit {
        if case .openSSL(let context) = state { EVP_MD_CTX_free(context) }
    }

    /// Feeds bytes into the digest.
    public func update(_ buffer: UnsafeRawBufferPointer) {
        guard buffer.count > 0 else { return }
        switch state {
        case .openSSL(let context): EVP_DigestUpdate(context, buffer.baseAddress, buffer.count)
        case .crc32c(let crc): state = .crc32c(CRC32C.checksum(buffer, seed: crc))
        }
    }

    /// Feeds bytes into the digest.
    public func update<Bytes: DataProtocol>(_ data: Bytes) {
        for region in data.regions {
            region.withUnsafeBytes { update($0) }
        }
    }

    /// Returns the digest of everything fed so far. The hasher cannot be used afterwards.
    public func finalize() -> Digest {
        switch state {
        case .openSSL(let context):
            var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            EVP_DigestFinal_ex(context, &output, &length)
            return Digest(bytes: Array(output.prefix(Int(length))))
        case .crc32c(let crc):
            return Digest(bytes: [UInt8(truncatingIfNeeded: crc >> 24), UInt8(truncatingIfNeeded: crc >> 16), UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc)])
        }
    }
}

/// Several digests of one stream of bytes, computed in one pass: the one hashing loop that
/// uploads, downloads, checksums and part copies share.
///
/// Not `Sendable`: one set belongs to one task.
public final class DigestSet {
    private let hashers: [DigestHasher]

    /// Starts a digest for each distinct algorithm in `algorithms` (none is fine: then it
    /// only passes bytes by).
    ///
    /// - Throws: As ``DigestHasher/init(_:)``.
    public init<Algorithms: Sequence>(_ algorithms: Algorithms) throws where Algorithms.Element == HashAlgorithm {
        var seen: Set<HashAlgorithm> = []
        hashers = try algorithms.filter { seen.insert($0).inserted }.map(DigestHasher.init)
    }

    /// Whether there is anything to compute.
    public var isEmpty: Bool { hashers.isEmpty }

    /// Feeds bytes into every digest.
    public func update(_ buffer: UnsafeRawBufferPointer) {
        for hasher in hashers { hasher.update(buffer) }
    }

    /// Feeds bytes into every digest.
    public func update<Bytes: DataProtocol>(_ data: Bytes) {
        for hasher in hashers { hasher.update(data) }
    }

    /// The digests of everything fed so far. The set cannot be used afterwards.
    public func finalize() -> [HashAlgorithm: Digest] {
        Dictionary(uniqueKeysWithValues: hashers.map { ($0.algorithm, $0.finalize()) })
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

    /// The SHA-256 of `data`, which OpenSSL computes in every mode, FIPS included.
    public static func sha256<Bytes: DataProtocol>(_ data: Bytes) -> Digest {
        var output = [UInt8](repeating: 0, count: 32)
        let bytes = Array(data)
        bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                _ = SHA256(input.baseAddress, input.count, out.baseAddress)
            }
        }
        return Digest(bytes: output)
    }

    /// Lowercase hex SHA-256 of `data`.
    public static func sha256Hex<Bytes: DataProtocol>(_ data: Bytes) -> String {
        sha256(data).hex
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
