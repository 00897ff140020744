import Foundation

/// Finds a key that appears twice in one JSON object, which `JSONDecoder` and
/// `JSONSerialization` silently resolve by keeping one of them: a configuration with
/// `"root"` twice must be an error, not a guess.
package enum JSONDuplicateKeys {
    /// The path of the first duplicated key (`remotes.a`), or nil when there is none or the text
    /// is not JSON (the decoder reports that).
    package static func first(in bytes: [UInt8]) -> String? {
        var scanner = Scanner(bytes: bytes)
        return scanner.duplicate()
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func duplicate() -> String? {
            skipSpace()
            return (try? value(path: [])) ?? nil
        }

        struct Malformed: Error {}

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        /// Scans one value; returns the path of a duplicate inside it, if any.
        mutating func value(path: [String]) throws -> String? {
            skipSpace()
            guard index < bytes.count else { throw Malformed() }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var seen: Set<[UInt8]> = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return nil
                }
                while true {
                    skipSpace()
                    let key = try string()
                    let name = String(decoding: key, as: UTF8.self)
                    if !seen.insert(key).inserted { return (path + [name]).joined(separator: ".") }
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw Malformed() }
                    index += 1
                    if let found = try value(path: path + [name]) { return found }
                    skipSpace()
                    guard index < bytes.count else { throw Malformed() }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "}") { index += 1; return nil }
                    throw Malformed()
                }
            case UInt8(ascii: "["):
                index += 1
                var position = 0
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return nil
                }
                while true {
                    if let found = try value(path: path + ["[\(position)]"]) { return found }
                    position += 1
                    skipSpace()
                    guard index < bytes.count else { throw Malformed() }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "]") { index += 1; return nil }
                    throw Malformed()
                }
            case UInt8(ascii: "\""):
                _ = try string()
                return nil
            default:
                // A number, true, false or null: skip to the next delimiter.
                while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) {
                    index += 1
                }
                return nil
            }
        }

        /// A string's bytes with its escapes decoded, as the decoder reads it: `"exp"` and
        /// `"\u0065xp"` are the same key, and so a duplicate.
        mutating func string() throws -> [UInt8] {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Malformed() }
            index += 1
            let start = index
            var escaped = false
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                if bytes[index] == UInt8(ascii: "\\") { escaped = true }
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            guard index < bytes.count else { throw Malformed() }
            defer { index += 1 }
            let raw = Array(bytes[(start - 1)...index])
            guard escaped else { return Array(raw.dropFirst().dropLast()) }
            do {
                return Array(try JSONDecoder().decode(String.self, from: Data(raw)).utf8)
            } catch {
                throw Malformed()
            }
        }
    }
}
