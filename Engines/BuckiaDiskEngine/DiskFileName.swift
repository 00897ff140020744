import BuckiaCore
import Foundation

/// The file name a ``DiskStorageEngine`` gives a key, and the way back.
///
/// A name is never the raw key, so no key can play path tricks (`..`, `/`, a leading `.`),
/// collide with another key on a case-insensitive file system, or exceed `NAME_MAX`:
///
/// - A key of at most 125 UTF-8 bytes is named by the lowercase, unpadded base32 of its
///   bytes (RFC 4648 alphabet): at most ``maximumEncodedLength`` characters, and decodable,
///   so listing keys needs no file reads.
/// - A longer key is named `~` followed by the lowercase hex SHA-256 of its bytes (65
///   characters). The key itself is in the file's header, which is where listing reads it.
///
/// ```swift
/// DiskFileName.fileName(for: CacheKey(verbatim: "hello"))   // "nbswy3dp"
/// ```
public enum DiskFileName {
    /// The longest base32 name; keys whose encoding would be longer are hashed.
    public static let maximumEncodedLength = 200

    /// The first character of a hashed name. It is outside the base32 alphabet, so the two
    /// kinds of name never meet.
    public static let hashedPrefix: Character = "~"

    /// What a file name found in the directory says about its key.
    enum Parsed: Hashable, Sendable {
        /// A base32 name: the key, decoded from the name alone.
        case key(CacheKey)
        /// A hashed name: the key is only in the file's header.
        case hashed
    }

    /// The file name for `key` (no folder; see ``StorageLayout/folder(for:)``).
    ///
    /// Call it with keys that passed `CacheKey.validate()`; the name of an empty key is empty.
    public static func fileName(for key: CacheKey) -> String {
        let bytes = key.value.utf8
        if Base32.encodedLength(ofByteCount: bytes.count) <= maximumEncodedLength {
            return Base32.encode(bytes)
        }
        return String(hashedPrefix) + Hashing.sha256Hex(Data(bytes))
    }

    /// The key a base32 file name stands for, or nil for a hashed name or a name this engine
    /// would never write (a foreign file).
    public static func key(fromFileName name: String) -> CacheKey? {
        guard case .key(let key)? = parse(Array(name.utf8)) else { return nil }
        return key
    }

    /// Whether `name` is a name this engine writes: a canonical base32 name of a valid key,
    /// or a hashed name.
    public static func isValueFileName(_ name: String) -> Bool {
        parse(Array(name.utf8)) != nil
    }

    /// Classifies a file name's bytes; nil means the file is not a value (skip it).
    static func parse(_ name: [UInt8]) -> Parsed? {
        guard let first = name.first else { return nil }
        if first == UInt8(ascii: "~") {
            guard name.count == 65, name.dropFirst().allSatisfy(isLowercaseHexDigit) else { return nil }
            return .hashed
        }
        guard name.count <= maximumEncodedLength, let bytes = Base32.decode(name) else { return nil }
        // A name must hold a key `write` accepts: valid UTF-8, not empty, no NUL, and short
        // enough that it would not have been hashed.
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.utf8.elementsEqual(bytes) else { return nil }
        let key = CacheKey(verbatim: text)
        guard (try? key.validate()) != nil else { return nil }
        return .key(key)
    }

    /// Whether the hashed name `name` belongs to `key`.
    static func hashedName(_ name: String, matches key: CacheKey) -> Bool {
        fileName(for: key) == name
    }

    private static func isLowercaseHexDigit(_ character: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(character) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(character)
    }
}
