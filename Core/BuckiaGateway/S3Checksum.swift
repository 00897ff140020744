import BuckiaCore
import Foundation

/// A checksum S3 accepts, named as in its headers (`x-amz-checksum-crc64nvme`) and in its XML
/// (`ChecksumCRC64NVME`).
enum S3ChecksumAlgorithm: String, CaseIterable, Sendable {
    case crc32, crc32c, crc64nvme, sha1, sha256

    /// The algorithm a header (`x-amz-checksum-sha256`) or a name (`SHA256`) names.
    init?(name: String) {
        let lower = name.lowercased()
        self.init(rawValue: lower.hasPrefix("x-amz-checksum-") ? String(lower.dropFirst("x-amz-checksum-".count)) : lower)
    }

    var header: String { "x-amz-checksum-" + rawValue }
    var xmlName: String { "Checksum" + rawValue.uppercased() }
    /// `value` in the element S3's XML answers name this checksum by (`<ChecksumCRC32>…`).
    func element(_ value: String) -> String { "<\(xmlName)>\(value)</\(xmlName)>" }
    /// The length of a value, in bytes.
    var length: Int {
        switch self {
        case .crc32, .crc32c: 4
        case .crc64nvme: 8
        case .sha1: 20
        case .sha256: 32
        }
    }

    /// Whether values of parts can be combined into the whole object's (a `FULL_OBJECT`
    /// checksum of a multipart upload, which S3 gives the CRCs only).
    var isCRC: Bool { self == .crc32 || self == .crc32c || self == .crc64nvme }

    /// The checksum of `data`, big-endian for a CRC, as S3 encodes it before base64.
    func digest(_ data: Data) throws -> [UInt8] {
        switch self {
        case .crc32: return withUnsafeBytes(of: CRC32.checksum(data).bigEndian, Array.init)
        case .crc32c: return withUnsafeBytes(of: CRC32C.checksum(data).bigEndian, Array.init)
        case .crc64nvme: return withUnsafeBytes(of: CRC64NVME.checksum(data).bigEndian, Array.init)
        case .sha1: return try Hashing.digest(data, .sha1).bytes
        case .sha256: return Hashing.sha256(data).bytes
        }
    }

    /// The reflected polynomial and width of a CRC.
    private var polynomial: (value: UInt64, width: Int)? {
        switch self {
        case .crc32: (0xEDB8_8320, 32)
        case .crc32c: (0x82F6_3B78, 32)
        case .crc64nvme: (0x9A6C_9329_AC4B_C9B5, 64)
        case .sha1, .sha256: nil
        }
    }

    /// The CRC of A followed by B from the CRCs of A and of B and B's length, as zlib's
    /// `crc32_combine` computes it (multiplying by x^(8·length) modulo the polynomial), for
    /// any of the three reflected, all-ones CRCs S3 takes. Nil for the hashes, which cannot be
    /// combined.
    func combine(_ first: [UInt8], _ second: [UInt8], secondLength: Int64) -> [UInt8]? {
        guard let (poly, width) = polynomial, first.count == length, second.count == length, secondLength >= 0 else { return nil }
        func value(_ bytes: [UInt8]) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }
        func multiply(_ a: UInt64, _ b: UInt64) -> UInt64 {
            guard a != 0 else { return 0 }
            var mask: UInt64 = 1 << (width - 1)
            var b = b
            var product: UInt64 = 0
            while mask != 0 {
                if a & mask != 0 {
                    product ^= b
                    if a & (mask - 1) == 0 { break }
                }
                mask >>= 1
                b = b & 1 != 0 ? (b >> 1) ^ poly : b >> 1
            }
            return product
        }
        // x^(2^k) for k = 0, 1, …, then x^(8·n) as the product of those n's bits name.
        var power: UInt64 = 1 << (width - 2)  // x^1
        for _ in 0..<3 { power = multiply(power, power) }  // x^8: one byte
        var shift: UInt64 = 1 << (width - 1)  // x^0
        var remaining = UInt64(secondLength)
        while remaining != 0 {
            if remaining & 1 != 0 { shift = multiply(power, shift) }
            power = multiply(power, power)
            remaining >>= 1
        }
        let combined = multiply(shift, value(first)) ^ value(second)
        return (0..<length).map { UInt8(truncatingIfNeeded: combined >> (8 * UInt64(length - 1 - $0))) }
    }
}

/// A checksum the gateway keeps with an object, to answer `x-amz-checksum-mode: ENABLED` and
/// GetObjectAttributes as S3 does.
struct S3StoredChecksum: Equatable, Sendable {
    var algorithm: S3ChecksumAlgorithm
    /// The value as S3 shows it: base64, with `-N` for a composite of N parts.
    var value: String
    /// `FULL_OBJECT` (of the bytes) or `COMPOSITE` (of the parts' checksums).
    var composite: Bool

    var type: String { composite ? "COMPOSITE" : "FULL_OBJECT" }
}

/// What the gateway keeps with an object besides its client's metadata, in one metadata entry
/// (``metadataName``) that clients never see or set: the sizes of the parts a multipart upload
/// made it from (for `partNumber` reads and `x-amz-mp-parts-count`) and the checksum S3 would
/// return for it. A backend without user metadata keeps none of it: every object there is one
/// part, without a stored checksum.
///
/// Its text is `v1`, then `;parts=` sizes (runs as `SIZExCOUNT`: `8388608x127,1234`) and
/// `;checksum=ALGORITHM:VALUE:TYPE`.
struct S3ObjectRecord: Equatable, Sendable {
    static let metadataName = "buckia-s3"
    /// At most this many bytes of text: the part sizes are left out past it (the object then
    /// reads as one part), so the entry fits every backend's metadata (S3's 2 KB).
    static let maximumLength = 1024

    var partSizes: [Int64] = []
    var checksum: S3StoredChecksum?

    var isEmpty: Bool { partSizes.isEmpty && checksum == nil }

    /// The record's text, without the part sizes when those would not fit.
    var text: String {
        var fields = ["v1"]
        if let checksum { fields.append("checksum=\(checksum.algorithm.rawValue):\(checksum.value):\(checksum.type)") }
        if !partSizes.isEmpty {
            var runs: [String] = []
            var index = 0
            while index < partSizes.count {
                var end = index + 1
                while end < partSizes.count, partSizes[end] == partSizes[index] { end += 1 }
                runs.append(end - index > 1 ? "\(partSizes[index])x\(end - index)" : "\(partSizes[index])")
                index = end
            }
            let parts = "parts=" + runs.joined(separator: ",")
            if fields.joined(separator: ";").utf8.count + 1 + parts.utf8.count <= Self.maximumLength { fields.append(parts) }
        }
        return fields.joined(separator: ";")
    }

    init(partSizes: [Int64] = [], checksum: S3StoredChecksum? = nil) {
        self.partSizes = partSizes
        self.checksum = checksum
    }

    /// The record in `metadata`; an entry that is not one this gateway wrote (written past it,
    /// or damaged) is read as no record, never trusted in part.
    init(metadata: [String: String]) {
        guard let text = metadata[Self.metadataName], text.utf8.count <= Self.maximumLength, let record = Self.parse(text) else { return }
        self = record
    }

    private static func parse(_ text: String) -> S3ObjectRecord? {
        var fields = text.split(separator: ";", omittingEmptySubsequences: false)
        guard fields.first == "v1" else { return nil }
        fields.removeFirst()
        var record = S3ObjectRecord()
        for field in fields {
            guard let equals = field.firstIndex(of: "=") else { return nil }
            let value = field[field.index(after: equals)...]
            switch field[..<equals] {
            case "parts":
                var sizes: [Int64] = []
                for run in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let pieces = run.split(separator: "x", omittingEmptySubsequences: false)
                    guard (1...2).contains(pieces.count), let size = Int64(pieces[0]), size >= 0,
                          let count = pieces.count == 2 ? Int(pieces[1]) : 1, count >= 1, count <= 10_000 - sizes.count
                    else { return nil }
                    sizes += repeatElement(size, count: count)
                }
                record.partSizes = sizes
            case "checksum":
                let pieces = value.split(separator: ":", omittingEmptySubsequences: false)
                guard pieces.count == 3, let algorithm = S3ChecksumAlgorithm(rawValue: String(pieces[0])),
                      pieces[2] == "COMPOSITE" || pieces[2] == "FULL_OBJECT"
                else { return nil }
                let composite = pieces[2] == "COMPOSITE"
                let encoded = composite ? pieces[1].split(separator: "-", maxSplits: 1).first.map(String.init) ?? "" : String(pieces[1])
                guard let bytes = Data(base64Encoded: encoded), bytes.count == algorithm.length else { return nil }
                record.checksum = S3StoredChecksum(algorithm: algorithm, value: String(pieces[1]), composite: composite)
            default:
                return nil
            }
        }
        return record
    }

    /// The byte range of part `number` (from 1), or nil when the object has no such part.
    func range(ofPart number: Int, objectSize: Int64) -> Range<Int64>? {
        guard !partSizes.isEmpty else { return number == 1 ? 0..<objectSize : nil }
        guard (1...partSizes.count).contains(number) else { return nil }
        var start: Int64 = 0
        for size in partSizes[..<(number - 1)] {
            let (sum, overflow) = start.addingReportingOverflow(size)
            guard !overflow else { return nil }
            start = sum
        }
        let (end, overflow) = start.addingReportingOverflow(partSizes[number - 1])
        guard !overflow, end <= objectSize else { return nil }
        return start..<end
    }

    /// How many parts a multipart upload made the object from, as `x-amz-mp-parts-count` says:
    /// nil for an object uploaded whole.
    var partsCount: Int? { partSizes.isEmpty ? nil : partSizes.count }
}

/// One of S3's checksums computed as bytes pass, a chunk at a time.
final class S3ChecksumComputer {
    let algorithm: S3ChecksumAlgorithm
    private var crc32: UInt32 = 0
    private var crc64: UInt64 = 0
    private let hasher: DigestHasher?

    init(_ algorithm: S3ChecksumAlgorithm) throws {
        self.algorithm = algorithm
        switch algorithm {
        case .crc32c: hasher = try DigestHasher(.crc32c)
        case .sha1: hasher = try DigestHasher(.sha1)
        case .sha256: hasher = try DigestHasher(.sha256)
        case .crc32, .crc64nvme: hasher = nil
        }
    }

    func update(_ chunk: Data) {
        switch algorithm {
        case .crc32: crc32 = CRC32.checksum(chunk, seed: crc32)
        case .crc64nvme: crc64 = CRC64NVME.checksum(chunk, seed: crc64)
        case .crc32c, .sha1, .sha256: hasher?.update(chunk)
        }
    }

    /// The checksum of every byte passed, as S3 encodes it before base64.
    func finalize() -> [UInt8] {
        switch algorithm {
        case .crc32: withUnsafeBytes(of: crc32.bigEndian, Array.init)
        case .crc64nvme: withUnsafeBytes(of: crc64.bigEndian, Array.init)
        case .crc32c, .sha1, .sha256: hasher?.finalize().bytes ?? []
        }
    }
}
