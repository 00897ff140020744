import BuckiaCore
import Foundation

/// The few bytes in front of every value a ``DiskStorageEngine`` stores.
///
/// Layout, all integers little-endian:
///
/// | offset | size | field                                             |
/// |--------|------|---------------------------------------------------|
/// | 0      | 4    | magic `BKV1`                                      |
/// | 4      | 8    | createdAt: Float64 seconds since 1970 (bit pattern) |
/// | 12     | 4    | key length in bytes (UInt32)                      |
/// | 16     | n    | the key's UTF-8 bytes                             |
/// | 16 + n | …    | the value                                         |
///
/// The header keeps what a file system cannot: when the key was first written (the file's
/// modification time is the last write) and the key itself, which a hashed file name has
/// lost. It is also a check: a file whose header does not hold the key it is read for is
/// reported as corrupt rather than returned as someone else's value.
struct DiskValueHeader: Hashable, Sendable {
    /// The four bytes every value file starts with.
    static let magic: [UInt8] = Array("BKV1".utf8)
    /// The size of the fields before the key.
    static let fixedLength = 16
    /// The most bytes a header can take: the fixed fields plus the longest key.
    static let maximumLength = fixedLength + CacheKey.maximumUTF8Length

    /// When the key was first written.
    var createdAt: Date
    /// The key's UTF-8 bytes.
    var key: [UInt8]

    /// The size of the encoded header; the value starts at this offset.
    var length: Int { DiskValueHeader.fixedLength + key.count }

    /// The header's bytes.
    func encoded() -> Data {
        var data = Data(capacity: length)
        data.append(contentsOf: DiskValueHeader.magic)
        withUnsafeBytes(of: createdAt.timeIntervalSince1970.bitPattern.littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(key.count).littleEndian) { data.append(contentsOf: $0) }
        data.append(contentsOf: key)
        return data
    }

    /// Reads a header from the start of `bytes`, which may go on into the value.
    ///
    /// - Parameter subject: The key (or file) to name in the error.
    /// - Throws: ``BuckiaError/Code/corrupt`` if the bytes are too short, the magic is wrong,
    ///   the key length is impossible or the time is not a finite number.
    init(parsing bytes: Data, subject: String) throws {
        func corrupt(_ problem: String) -> BuckiaError {
            BuckiaError(
                .corrupt, "The stored value's header is damaged (\(problem)); write the key again or remove it.",
                operation: "read", path: subject)
        }
        let parsed: (createdAt: Double, keyLength: Int)? = bytes.withUnsafeBytes { raw in
            guard raw.count >= DiskValueHeader.fixedLength, raw.prefix(4).elementsEqual(DiskValueHeader.magic) else { return nil }
            let time = Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt64.self)))
            let keyLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
            return (time, keyLength)
        }
        guard let parsed else {
            throw corrupt(bytes.count < DiskValueHeader.fixedLength ? "the file is only \(bytes.count) bytes" : "no BKV1 magic")
        }
        guard parsed.createdAt.isFinite else { throw corrupt("the creation time is not a number") }
        guard (1...CacheKey.maximumUTF8Length).contains(parsed.keyLength) else {
            throw corrupt("a key length of \(parsed.keyLength) bytes")
        }
        let keyStart = bytes.startIndex + DiskValueHeader.fixedLength
        guard bytes.count >= DiskValueHeader.fixedLength + parsed.keyLength else {
            throw corrupt("the file ends inside the key")
        }
        createdAt = Date(timeIntervalSince1970: parsed.createdAt)
        key = Array(bytes[keyStart..<(keyStart + parsed.keyLength)])
    }

    /// Creates a header for a new write.
    init(createdAt: Date, key: [UInt8]) {
        self.createdAt = createdAt
        self.key = key
    }
}
