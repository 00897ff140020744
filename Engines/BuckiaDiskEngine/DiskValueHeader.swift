import BuckiaCore
import Foundation

/// The few bytes in front of every value a ``DiskStorageEngine`` stores.
///
/// Layout (`BKV2`), all integers little-endian:
///
/// | offset | size | field                                             |
/// |--------|------|---------------------------------------------------|
/// | 0      | 4    | magic `BKV2`                                      |
/// | 4      | 8    | createdAt: Float64 seconds since 1970 (bit pattern) |
/// | 12     | 4    | key length in bytes (UInt32)                      |
/// | 16     | 8    | value length in bytes (UInt64)                    |
/// | 24     | 4    | CRC-32C of the key's bytes followed by the value   |
/// | 28     | n    | the key's UTF-8 bytes                             |
/// | 28 + n | …    | the value                                         |
///
/// The header keeps what a file system cannot: when the key was first written (the file's
/// modification time is the last write) and the key itself, which a hashed file name has
/// lost. It is also a check: a file whose header does not hold the key it is read for, whose
/// value is shorter or longer than recorded, or whose bytes do not match the CRC, is reported
/// as corrupt rather than returned. Files written before `BKV2` (`BKV1`: no length, no CRC)
/// still read, unchecked, and are rewritten as `BKV2` on their next write.
struct DiskValueHeader: Hashable, Sendable {
    /// The four bytes every value file starts with.
    static let magic: [UInt8] = Array("BKV2".utf8)
    /// The magic of files written before values carried a length and a CRC.
    static let legacyMagic: [UInt8] = Array("BKV1".utf8)
    /// The size of the fields before the key.
    static let fixedLength = 28
    /// The size of the fields before the key in a `BKV1` file.
    static let legacyFixedLength = 16
    /// The most bytes a header can take: the fixed fields plus the longest key.
    static let maximumLength = fixedLength + CacheKey.maximumUTF8Length

    /// When the key was first written.
    var createdAt: Date
    /// The key's UTF-8 bytes.
    var key: [UInt8]
    /// The value's length and CRC-32C (of the key and the value), or nil for a `BKV1` file.
    var check: (length: UInt64, crc: UInt32)?

    /// The size of the encoded header; the value starts at this offset.
    var length: Int { (check == nil ? DiskValueHeader.legacyFixedLength : DiskValueHeader.fixedLength) + key.count }

    /// The header's bytes.
    func encoded() -> Data {
        var data = Data(capacity: length)
        data.append(contentsOf: DiskValueHeader.magic)
        withUnsafeBytes(of: createdAt.timeIntervalSince1970.bitPattern.littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(key.count).littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: (check?.length ?? 0).littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: (check?.crc ?? 0).littleEndian) { data.append(contentsOf: $0) }
        data.append(contentsOf: key)
        return data
    }

    /// The CRC a value file records for `key` and `value`.
    static func crc(key: [UInt8], value: UnsafeRawBufferPointer) -> UInt32 {
        CRC32C.checksum(value, seed: key.withUnsafeBytes { CRC32C.checksum($0) })
    }

    /// The value that follows this header in `bytes` (the whole file), checked against the
    /// recorded length and CRC.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` when the file is truncated or extended, or its
    ///   bytes do not match the CRC.
    func value(in bytes: Data, subject: String) throws -> Data {
        let range = (bytes.startIndex + length)..<bytes.endIndex
        guard let check else { return bytes.subdata(in: range) }
        guard UInt64(range.count) == check.length else {
            throw BuckiaError(
                .corrupt, "The stored value is \(range.count) bytes where \(check.length) were written: the file was truncated or extended. Write the key again or remove it.",
                operation: "read", path: subject)
        }
        let crc = bytes.withUnsafeBytes { raw in
            DiskValueHeader.crc(key: key, value: UnsafeRawBufferPointer(rebasing: raw[(length)..<raw.count]))
        }
        guard crc == check.crc else {
            throw BuckiaError(
                .corrupt, "The stored value's bytes do not match their CRC-32C: the file was damaged. Write the key again or remove it.",
                operation: "read", path: subject)
        }
        return bytes.subdata(in: range)
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
        typealias Fields = (createdAt: Double, keyLength: Int, check: (length: UInt64, crc: UInt32)?, fixed: Int)
        let parsed: Fields? = bytes.withUnsafeBytes { raw -> Fields? in
            guard raw.count >= DiskValueHeader.legacyFixedLength else { return nil }
            let time = Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt64.self)))
            let keyLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
            if raw.prefix(4).elementsEqual(DiskValueHeader.legacyMagic) {
                return (time, keyLength, nil, DiskValueHeader.legacyFixedLength)
            }
            guard raw.count >= DiskValueHeader.fixedLength, raw.prefix(4).elementsEqual(DiskValueHeader.magic) else { return nil }
            let valueLength = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
            let crc = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt32.self))
            return (time, keyLength, (valueLength, crc), DiskValueHeader.fixedLength)
        }
        guard let parsed else {
            throw corrupt(bytes.count < DiskValueHeader.fixedLength ? "the file is only \(bytes.count) bytes" : "no BKV2 magic")
        }
        guard parsed.createdAt.isFinite else { throw corrupt("the creation time is not a number") }
        guard (1...CacheKey.maximumUTF8Length).contains(parsed.keyLength) else {
            throw corrupt("a key length of \(parsed.keyLength) bytes")
        }
        let keyStart = bytes.startIndex + parsed.fixed
        guard bytes.count >= parsed.fixed + parsed.keyLength else {
            throw corrupt("the file ends inside the key")
        }
        createdAt = Date(timeIntervalSince1970: parsed.createdAt)
        key = Array(bytes[keyStart..<(keyStart + parsed.keyLength)])
        check = parsed.check
    }

    /// Creates the header for writing `value` under `key`.
    init(createdAt: Date, key: [UInt8], value: Data) {
        self.createdAt = createdAt
        self.key = key
        check = (UInt64(value.count), value.withUnsafeBytes { DiskValueHeader.crc(key: key, value: $0) })
    }

    static func == (lhs: DiskValueHeader, rhs: DiskValueHeader) -> Bool {
        lhs.createdAt == rhs.createdAt && lhs.key == rhs.key && lhs.check?.length == rhs.check?.length && lhs.check?.crc == rhs.check?.crc
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(createdAt)
        hasher.combine(key)
        hasher.combine(check?.length)
        hasher.combine(check?.crc)
    }
}
