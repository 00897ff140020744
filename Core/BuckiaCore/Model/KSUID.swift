import Foundation

/// A K-Sortable Unique IDentifier (Segment's KSUID): 4 bytes of seconds since 2014-05-13
/// 16:53:20 UTC, then 16 random bytes, written as 27 base-62 characters. Sorting the text
/// sorts by time, which is why inbound change files are named with them (seed 002): "newer
/// than the last applied" is a string comparison and a listing's start-after.
public struct KSUID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 20 bytes: timestamp (big-endian) then payload.
    public let bytes: [UInt8]

    /// KSUID time 0, in Unix seconds.
    public static let epoch: TimeInterval = 1_400_000_000
    /// The length of the text form.
    public static let textLength = 27
    private static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)

    /// A KSUID for `date` (to the second) with `payload` (16 bytes; random by default).
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a date outside KSUID's range
    ///   (2014 to 2150) or a payload that is not 16 bytes.
    public init(date: Date = Date(), payload: [UInt8]? = nil) throws {
        let seconds = (date.timeIntervalSince1970 - Self.epoch).rounded(.down)
        guard seconds >= 0, seconds <= Double(UInt32.max) else {
            throw BuckiaError(.invalidConfiguration, "A KSUID cannot hold the time \(date); its range is 2014-05-13 to 2150-06-19.")
        }
        let random = try payload ?? SecureRandom.bytes(count: 16)
        guard random.count == 16 else {
            throw BuckiaError(.invalidConfiguration, "A KSUID payload is 16 bytes, not \(random.count).")
        }
        let time = UInt32(seconds)
        bytes = [UInt8(time >> 24), UInt8(truncatingIfNeeded: time >> 16), UInt8(truncatingIfNeeded: time >> 8), UInt8(truncatingIfNeeded: time)] + random
    }

    /// A KSUID from its parts: `timestamp` in seconds since ``epoch``, and the first 16 bytes of
    /// `payload`, zero-padded when shorter.
    public init(timestamp: UInt32, payload: [UInt8]) {
        let random = Array(payload.prefix(16)) + [UInt8](repeating: 0, count: max(0, 16 - payload.count))
        bytes = [UInt8(timestamp >> 24), UInt8(truncatingIfNeeded: timestamp >> 16), UInt8(truncatingIfNeeded: timestamp >> 8), UInt8(truncatingIfNeeded: timestamp)] + random
    }

    /// Parses the 27-character text form; nil for anything else.
    public init?(_ text: String) {
        let characters = Array(text.utf8)
        guard characters.count == Self.textLength else { return nil }
        // Base 62 to base 256, one digit at a time, over a 20-byte big-endian number.
        var number = [UInt8](repeating: 0, count: 20)
        for character in characters {
            guard let digit = Self.alphabet.firstIndex(of: character) else { return nil }
            var carry = digit
            for index in number.indices.reversed() {
                let value = Int(number[index]) * 62 + carry
                number[index] = UInt8(value & 0xFF)
                carry = value >> 8
            }
            // A carry left over means the text is above the largest 20-byte value.
            guard carry == 0 else { return nil }
        }
        bytes = number
    }

    /// The text form: 27 base-62 characters, zero-padded.
    public var description: String {
        var number = bytes
        var digits: [UInt8] = []
        while number.contains(where: { $0 != 0 }) {
            var remainder = 0
            for index in number.indices {
                let value = remainder * 256 + Int(number[index])
                number[index] = UInt8(value / 62)
                remainder = value % 62
            }
            digits.append(Self.alphabet[remainder])
        }
        while digits.count < Self.textLength { digits.append(Self.alphabet[0]) }
        return String(decoding: digits.reversed(), as: UTF8.self)
    }

    /// Seconds since the KSUID epoch.
    public var timestamp: UInt32 { bytes.prefix(4).reduce(0) { $0 << 8 | UInt32($1) } }

    /// When it was made, to the second.
    public var date: Date { Date(timeIntervalSince1970: Self.epoch + TimeInterval(timestamp)) }

    /// The 16 bytes after the timestamp.
    public var payload: [UInt8] { Array(bytes.suffix(16)) }

    /// By bytes, which is by time first, and the same order as the text.
    public static func < (lhs: KSUID, rhs: KSUID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}
