import Foundation

/// A validated object key: the path of one object inside a bucket or root.
///
/// Keys are `/`-separated, relative, and stored byte for byte as given (no Unicode
/// normalisation: NFC and NFD spellings are different keys, as on S3). A key is rejected
/// before any I/O when it could escape its root or cannot be stored everywhere:
///
/// - empty, or longer than ``maximumUTF8Length`` bytes of UTF-8;
/// - absolute (starts with `/`) or ends with `/`;
/// - containing an empty, `.` or `..` segment;
/// - containing NUL.
///
/// The rules are checked on the UTF-8 bytes, as a file system or server sees them: a
/// combining mark after a `/` fuses with it into one `Character`, but the bytes still hold a
/// separator. Equality, hashing and ordering are by bytes too.
///
/// Provider requirements take `ObjectKey`, so an invalid path cannot reach a plugin. The
/// `String` conveniences validate and throw ``BuckiaError/Code/invalidPath``.
public struct ObjectKey: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// S3's limit, the strictest of the built-in backends.
    public static let maximumUTF8Length = 1024

    /// The key as a string.
    public let rawValue: String

    /// Validates `string` as a key.
    ///
    /// - Throws: ``BuckiaError`` with code ``BuckiaError/Code/invalidPath`` naming the rule broken.
    public init(_ string: String) throws {
        try ObjectKey.validate(string, allowEmpty: false, allowTrailingSlash: false)
        self.rawValue = string
    }

    /// Joins a validated key onto a prefix (`"users/1/"` + `"a.txt"`).
    public init(prefix: String, _ name: String) throws {
        try self.init(prefix + name)
    }

    /// The key's segments, split on each `/` byte.
    public var segments: [Substring] {
        rawValue.utf8.split(separator: ObjectKey.slash, omittingEmptySubsequences: false).map { rawValue[$0.startIndex..<$0.endIndex] }
    }

    /// The last segment.
    public var lastSegment: String { String(segments.last ?? Substring(rawValue)) }

    /// Whether the key's bytes begin with `prefix`'s bytes.
    ///
    /// `String.hasPrefix` compares characters, so `"cafe\u{301}"` does not start with
    /// `"cafe"` there; keys are bytes, and here it does.
    public func hasPrefix(_ prefix: String) -> Bool { rawValue.utf8HasPrefix(prefix) }

    /// The part of the key after `prefix`, by bytes, or nil when the key does not start with it.
    public func dropping(prefix: String) -> String? { rawValue.utf8Dropping(prefix: prefix) }

    public var description: String { rawValue }

    /// Compares the UTF-8 bytes: NFC and NFD spellings are different keys, although Swift's
    /// `String` equality treats them as the same.
    public static func == (lhs: ObjectKey, rhs: ObjectKey) -> Bool {
        // Native strings hold their UTF-8 contiguously: compare the buffers in one call.
        let fast = lhs.rawValue.utf8.withContiguousStorageIfAvailable { a in
            rhs.rawValue.utf8.withContiguousStorageIfAvailable { b in
                a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
            }
        }
        if let fast, let result = fast { return result }
        return lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        let hashed: Void? = rawValue.utf8.withContiguousStorageIfAvailable { bytes in
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
        if hashed == nil {
            // The same bytes, fed the same way, so equal keys hash alike whatever their storage.
            Array(rawValue.utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
        hasher.combine(rawValue.utf8.count)
    }

    /// Orders keys by their UTF-8 bytes, the order S3 and every built-in provider list in.
    public static func < (lhs: ObjectKey, rhs: ObjectKey) -> Bool {
        let fast = lhs.rawValue.utf8.withContiguousStorageIfAvailable { a in
            rhs.rawValue.utf8.withContiguousStorageIfAvailable { b in
                let common = min(a.count, b.count)
                let order = common == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, common)
                return order != 0 ? order < 0 : a.count < b.count
            }
        }
        if let fast, let result = fast { return result }
        return lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }

    public init(from decoder: any Decoder) throws {
        try self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Checks a listing prefix: the key rules, except that it may be empty and may end in `/`.
    public static func validatePrefix(_ prefix: String) throws {
        try validate(prefix, allowEmpty: true, allowTrailingSlash: true)
    }

    private static let slash = UInt8(ascii: "/")
    private static let dot = UInt8(ascii: ".")

    private static func validate(_ string: String, allowEmpty: Bool, allowTrailingSlash: Bool) throws {
        if let problem = brokenRule(string, allowEmpty: allowEmpty, allowTrailingSlash: allowTrailingSlash) {
            throw BuckiaError(.invalidPath, "The object key is not valid: \(problem).", path: string)
        }
    }

    /// Whether `prefix` is one a key can start with, by the rules ``validatePrefix(_:)``
    /// checks: for a name from outside (a listed folder) that is either a prefix or listed as
    /// unaddressable, where not being one is an answer, not a failure.
    public static func isValidPrefix(_ prefix: String) -> Bool {
        brokenRule(prefix, allowEmpty: true, allowTrailingSlash: true) == nil
    }

    /// `string` as a key when it is a valid one, else nil: for a name from outside that is
    /// either a key or listed as unaddressable.
    package init?(ifValid string: String) {
        guard Self.brokenRule(string, allowEmpty: false, allowTrailingSlash: false) == nil else { return nil }
        rawValue = string
    }

    /// Which rule `string` breaks, or nil for none.
    private static func brokenRule(_ string: String, allowEmpty: Bool, allowTrailingSlash: Bool) -> String? {
        // Over the bytes where the string keeps them (a native string's are contiguous): the
        // same checks over `String.UTF8View` stepped an index a byte, and every listed key and
        // every stored baseline passes here (a fifth of reading a sync state store's row).
        let found: String?? = string.utf8.withContiguousStorageIfAvailable { bytes -> String? in
            brokenRule(bytes, allowEmpty: allowEmpty, allowTrailingSlash: allowTrailingSlash)
        }
        if let found { return found }
        return Array(string.utf8).withUnsafeBufferPointer { brokenRule($0, allowEmpty: allowEmpty, allowTrailingSlash: allowTrailingSlash) }
    }

    /// Which rule `bytes` breaks as a key (or, allowing it, as a prefix), or nil for none.
    private static func brokenRule(_ bytes: UnsafeBufferPointer<UInt8>, allowEmpty: Bool, allowTrailingSlash: Bool) -> String? {
        if bytes.isEmpty { return allowEmpty ? nil : "it is empty" }
        if bytes.contains(0) { return "it contains a NUL character" }
        if bytes.count > maximumUTF8Length { return "it is \(bytes.count) bytes long; the limit is \(maximumUTF8Length)" }
        if bytes[0] == slash { return "it is absolute; keys are relative to the bucket or root" }
        var end = bytes.count
        if bytes[end - 1] == slash {
            guard allowTrailingSlash else { return "it ends with '/'; a key names an object, not a folder" }
            end -= 1
        } else if allowTrailingSlash {
            // A prefix's last segment is the start of a name: "." and ".." may begin ".env" or "..x".
            guard let lastSlash = bytes[..<end].lastIndex(of: slash) else { return nil }
            end = lastSlash
        }
        // One pass over the bytes, counting each segment's length and dots: listing a folder
        // validates every key it names, and splitting them allocated an array a key.
        var length = 0
        var dots = 0
        func check() -> String? {
            if length == 0 { return "it contains an empty segment ('//')" }
            if length == dots && length == 1 { return "it contains a '.' segment" }
            if length == dots && length == 2 { return "it contains a '..' segment, which could escape the root" }
            return nil
        }
        for byte in bytes[..<end] {
            if byte == slash {
                if let problem = check() { return problem }
                length = 0
                dots = 0
            } else {
                length += 1
                if byte == dot { dots += 1 }
            }
        }
        return check()
    }

    /// `name`, one segment, in `folder`: a listing names every file of a folder this way,
    /// validating each name and not the folder again. `folder` is empty or a prefix ending in
    /// `/` that ``validatePrefix(_:)`` accepted, which makes the two rules the same: every
    /// segment of `folder` is checked there, `name` here, and the length of the whole.
    ///
    /// - Throws: ``BuckiaError`` with code ``BuckiaError/Code/invalidPath`` naming the rule broken.
    package init(folder: String, name: String) throws {
        /// Whether `bytes` is one segment a key can hold: not empty, `.` or `..`, and no `/` or NUL.
        func isSegment(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            var dots = 0
            for byte in bytes {
                if byte == Self.slash || byte == 0 { return false }
                if byte == Self.dot { dots += 1 }
            }
            return !bytes.isEmpty && (dots != bytes.count || dots > 2)
        }
        // Over the name's bytes where they lie: a listing names every file this way.
        let segment = name.utf8.withContiguousStorageIfAvailable(isSegment) ?? Array(name.utf8).withUnsafeBufferPointer(isSegment)
        guard segment, folder.utf8.count + name.utf8.count <= Self.maximumUTF8Length else {
            self = try ObjectKey(folder + name)  // the full check says which rule
            return
        }
        rawValue = Self.joined(folder, name)
    }

    /// `head` followed by `tail`, made in one allocation and one copy of each: `+` went
    /// through the general append (850 instructions a key a listing named).
    private static func joined(_ head: String, _ tail: String) -> String {
        let count = head.utf8.count + tail.utf8.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            var written = 0
            func copy(_ part: String) {
                let copied = part.utf8.withContiguousStorageIfAvailable { bytes -> Int in
                    guard let source = bytes.baseAddress, let target = buffer.baseAddress else { return 0 }
                    UnsafeMutableRawPointer(target + written).copyMemory(from: source, byteCount: bytes.count)
                    return bytes.count
                }
                if copied == nil {
                    for byte in part.utf8 {
                        buffer[written] = byte
                        written += 1
                    }
                } else {
                    written += copied ?? 0
                }
            }
            copy(head)
            copy(tail)
            return written
        }
    }

    /// The key less `prefix` (empty, or ending in `/`), without validating again: what
    /// follows a `/` in a valid key is one. Nil when the key does not start with `prefix`,
    /// is nothing more, or `prefix` does not end a segment.
    package func relative(to prefix: String) -> ObjectKey? {
        if prefix.isEmpty { return self }
        guard prefix.utf8.last == Self.slash, let rest = rawValue.utf8Dropping(prefix: prefix), !rest.isEmpty else { return nil }
        return ObjectKey(validated: rest)
    }

    /// Whether `bytes` make a valid key, by the rules ``init(_:)`` checks.
    package static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        brokenRule(bytes, allowEmpty: false, allowTrailingSlash: false) == nil
    }

    /// How `a` sorts against `b` by bytes (`memcmp`, then the shorter first), the order of
    /// keys: negative, zero or positive.
    package static func compareBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int32 {
        let common = min(a.count, b.count)
        let order = common == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, common)
        return order != 0 ? order : a.count < b.count ? -1 : a.count > b.count ? 1 : 0
    }

    /// What follows a segment-ending prefix in a valid key, known to be one already (a sync
    /// keeps listed paths as bytes and makes keys of them again). A static function, not an
    /// initialiser: `ObjectKey.init` passed as a function must only ever mean the checked one.
    package static func validated(relative: String) -> ObjectKey {
        ObjectKey(validated: relative)
    }

    /// A key already known to be valid.
    private init(validated: String) {
        rawValue = validated
    }
}

extension String {
    /// Whether this string sorts before `other` by UTF-8 bytes (S3's listing order).
    @inlinable
    public func utf8Precedes(_ other: String) -> Bool {
        utf8.lexicographicallyPrecedes(other.utf8)
    }

    /// Whether this string's UTF-8 bytes begin with `prefix`'s: a key prefix test, where
    /// `hasPrefix` would compare characters.
    public func utf8HasPrefix(_ prefix: String) -> Bool {
        let fast = utf8.withContiguousStorageIfAvailable { bytes in
            prefix.utf8.withContiguousStorageIfAvailable { head in
                head.count <= bytes.count && (head.isEmpty || memcmp(bytes.baseAddress!, head.baseAddress!, head.count) == 0)
            }
        }
        if let fast, let result = fast { return result }
        return utf8.starts(with: prefix.utf8)
    }

    /// Whether the two strings hold the same UTF-8 bytes (`==` treats NFC and NFD as equal).
    public func utf8Equals(_ other: String) -> Bool {
        let fast = utf8.withContiguousStorageIfAvailable { bytes in
            other.utf8.withContiguousStorageIfAvailable { theirs in
                bytes.count == theirs.count && (bytes.isEmpty || memcmp(bytes.baseAddress!, theirs.baseAddress!, bytes.count) == 0)
            }
        }
        if let fast, let result = fast { return result }
        return utf8.elementsEqual(other.utf8)
    }

    /// Whether this string's UTF-8 bytes are `bytes`.
    package func utf8Equals(_ bytes: [UInt8]) -> Bool {
        let fast = utf8.withContiguousStorageIfAvailable { mine in
            bytes.withUnsafeBufferPointer { theirs in
                mine.count == theirs.count && (mine.isEmpty || memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0)
            }
        }
        return fast ?? utf8.elementsEqual(bytes)
    }

    /// The text `bytes` hold, or nil when they are not UTF-8: `String(validating:as:)`, which
    /// ran its unspecialised generic path across modules (two type-metadata lookups a call,
    /// 650 instructions a name a listing met), for text that is ASCII, as nearly all is.
    package static func validatingUTF8(_ bytes: [UInt8]) -> String? {
        if bytes.withUnsafeBufferPointer({ $0.allSatisfy { $0 < 0x80 } }) { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Whether this string's UTF-8 bytes are `head` followed by `tail`: a key checked against
    /// a folder and a name without joining them.
    package func utf8Equals(_ head: [UInt8], _ tail: [UInt8]) -> Bool {
        let fast = utf8.withContiguousStorageIfAvailable { mine in
            head.withUnsafeBufferPointer { head in
                tail.withUnsafeBufferPointer { tail in
                    guard mine.count == head.count + tail.count else { return false }
                    if !head.isEmpty && memcmp(mine.baseAddress!, head.baseAddress!, head.count) != 0 { return false }
                    return tail.isEmpty || memcmp(mine.baseAddress! + head.count, tail.baseAddress!, tail.count) == 0
                }
            }
        }
        return fast ?? utf8.elementsEqual(head + tail)
    }

    /// The rest of this string after `prefix`, by bytes, or nil when it does not start with it.
    public func utf8Dropping(prefix: String) -> String? {
        guard utf8HasPrefix(prefix) else { return nil }
        let count = prefix.utf8.count
        return utf8.withContiguousStorageIfAvailable { String(decoding: UnsafeBufferPointer(rebasing: $0[count...]), as: UTF8.self) }
            ?? String(decoding: utf8.dropFirst(count), as: UTF8.self)
    }
}
