/// RFC 4648 base32 with the alphabet lowercased and no padding: the encoding of short keys
/// into file names.
///
/// Lowercase keeps names unique on case-insensitive file systems (a key and its upper-case
/// twin must not collide on macOS), and the alphabet (`a`–`z`, `2`–`7`) holds no `/`, `.`,
/// `\` or anything else a file system or shell treats specially.
enum Base32 {
    private static let alphabet: [UInt8] = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    /// The number of characters `byteCount` bytes encode to.
    static func encodedLength(ofByteCount byteCount: Int) -> Int {
        (byteCount * 8 + 4) / 5
    }

    /// Encodes `bytes`, five bits per character, the last character zero-filled.
    static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var output: [UInt8] = []
        output.reserveCapacity(encodedLength(ofByteCount: bytes.count))
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                output.append(alphabet[Int((buffer >> UInt32(bits)) & 31)])
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 {
            output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes a canonical encoding, or returns nil.
    ///
    /// Only what ``encode(_:)`` produces is accepted: lowercase characters, a length that
    /// leaves fewer than five spare bits, and zero spare bits. So every byte string has exactly
    /// one name, and a file name that is not such a name is never mistaken for a key.
    static func decode<Characters: Collection>(_ characters: Characters) -> [UInt8]? where Characters.Element == UInt8 {
        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for character in characters {
            guard let value = value(of: character) else { return nil }
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        guard bits < 5, buffer == 0 else { return nil }
        return output
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): character - UInt8(ascii: "2") + 26
        default: nil
        }
    }
}
