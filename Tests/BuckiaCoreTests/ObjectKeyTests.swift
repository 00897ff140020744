import BuckiaCore
import Foundation
import Testing

/// A key for a table, shown with its escapes so invisible characters are visible.
struct KeyCase: Sendable, CustomTestStringConvertible {
    let name: String
    let key: String

    init(_ name: String, _ key: String) {
        self.name = name
        self.key = key
    }

    var testDescription: String {
        let shown = key.utf8.count > 40 ? "\(key.prefix(20))… (\(key.utf8.count) bytes)" : key
        return "\(name): \(shown.debugDescription)"
    }
}

struct ObjectKeyTests {
    static let nfc = "caf\u{e9}.txt"
    static let nfd = "cafe\u{301}.txt"

    static let valid: [KeyCase] = [
        KeyCase("plain", "a"), KeyCase("nested", "a/b/c.txt"), KeyCase("space", "my file.txt"),
        KeyCase("plus", "a+b"), KeyCase("percent", "100%.txt"), KeyCase("hash", "#tag"),
        KeyCase("question mark", "what?.txt"), KeyCase("NFC", nfc), KeyCase("NFD", nfd),
        KeyCase("emoji", "📷/🎉 party/👨‍👩‍👧.jpg"), KeyCase("CJK", "日本/メモ.txt"),
        KeyCase("dots inside names", "..."), KeyCase("dot prefix", ".hidden/..a/a.."),
        KeyCase("tab and newline", "a\tb\nc"), KeyCase("backslash", "a\\..\\b"),
        KeyCase("deep nesting", Array(repeating: "d", count: 400).joined(separator: "/") + "/f"),
        KeyCase("1024 ASCII bytes", String(repeating: "k", count: 1024)),
        KeyCase("1024 bytes of two-byte characters", String(repeating: "é", count: 512)),
        KeyCase("combining mark after a slash", "a/\u{301}b"),
        KeyCase("three dots as a segment", "a/.../b"), KeyCase("dots around a name", ".x/a."),
    ]

    static let invalid: [KeyCase] = [
        KeyCase("empty", ""), KeyCase("absolute", "/abs"), KeyCase("root", "/"), KeyCase("double root", "//"),
        KeyCase("dot-dot inside", "a/../b"), KeyCase("dot-dot", ".."), KeyCase("dot-dot first", "../x"),
        KeyCase("dot-dot last", "a/.."), KeyCase("dot", "."), KeyCase("dot inside", "a/./b"),
        KeyCase("dot first", "./a"), KeyCase("empty segment", "a//b"), KeyCase("trailing slash", "a/"),
        KeyCase("dot last", "a/."), KeyCase("empty segment after a dot-dot-ish name", "..a//b"),
        KeyCase("NUL", "a\u{0}b"), KeyCase("NUL alone", "\u{0}"),
        KeyCase("1025 bytes", String(repeating: "k", count: 1025)),
        KeyCase("1025 bytes, multi-byte", String(repeating: "é", count: 512) + "k"),
        // A combining mark fuses with the `/` before it into one Character; the bytes
        // still hold a separator, so Character-based checks must not be used.
        KeyCase("dot-dot hidden by a combining mark", "../\u{301}x"),
        KeyCase("absolute hidden by a combining mark", "/\u{301}abs"),
        KeyCase("empty segment hidden by a combining mark", "a//\u{301}b"),
        KeyCase("dot segment hidden by a combining mark", "./\u{301}a"),
    ]

    @Test("Valid keys are accepted byte for byte", arguments: valid)
    func accepts(_ row: KeyCase) throws {
        let key = try ObjectKey(row.key)
        #expect(Array(key.rawValue.utf8) == Array(row.key.utf8))
        #expect(Array(key.description.utf8) == Array(row.key.utf8))
        #expect(key.segments.map { Array($0.utf8) } == row.key.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map(Array.init))
        try ObjectKey.validatePrefix(row.key)
    }

    @Test("Invalid keys fail with invalidPath naming the key", arguments: invalid)
    func rejects(_ row: KeyCase) {
        let error = #expect(throws: BuckiaError.self) { try ObjectKey(row.key) }
        #expect(error?.code == .invalidPath)
        #expect(error?.path.map { Array($0.utf8) } == Array(row.key.utf8))
    }

    /// A key less a prefix that ends a segment is a key, taken without validating again.
    @Test(
        "A key relative to a prefix", arguments: [
            (key: "a/b/c", prefix: "", relative: "a/b/c"), (key: "a/b/c", prefix: "a/", relative: "b/c"),
            (key: "a/b/c", prefix: "a/b/", relative: "c"), (key: "a/b", prefix: "a/b/", relative: nil),
            (key: "a/b", prefix: "a", relative: nil), (key: "ab/c", prefix: "a/", relative: nil), (key: "a/b", prefix: "b/", relative: nil),
        ] as [(key: String, prefix: String, relative: String?)])
    func relativeKeys(key: String, prefix: String, relative: String?) throws {
        let result = try ObjectKey(key).relative(to: prefix)
        #expect(result?.rawValue == relative)
        if let relative { #expect(result == (try ObjectKey(relative))) }
    }

    @Test("Prefixes may be empty or end in /", arguments: ["", "a/", "a/b/", "a", "photos/2024", "é/"])
    func validPrefix(prefix: String) throws {
        try ObjectKey.validatePrefix(prefix)
    }

    @Test("Prefixes follow the other key rules", arguments: ["/", "/a/", "a//", "../", "a/../", "./", "a\u{0}/", "//"])
    func invalidPrefix(prefix: String) {
        let error = #expect(throws: BuckiaError.self) { try ObjectKey.validatePrefix(prefix) }
        #expect(error?.code == .invalidPath)
    }

    @Test("Keys order by their UTF-8 bytes, not by String comparison")
    func ordering() throws {
        let raw = ["z", "a/b", "\u{FFFF}", "B", "😀", "a", "aa", "a-b", Self.nfd, "\u{E000}", "f", "~"]
        let sorted = try raw.map(ObjectKey.init).sorted().map(\.rawValue)
        let expected = raw.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(sorted.map { Array($0.utf8) } == expected.map { Array($0.utf8) })
        // UTF-8 order puts the decomposed "é" (0x65 0xCC 0x81) before "f"; String order does not.
        #expect(try ObjectKey(Self.nfd) < ObjectKey("f"))
        #expect(!(try ObjectKey("f") < ObjectKey(Self.nfd)))
        #expect(Self.nfd.utf8Precedes("f"))
        // U+E000 sorts before U+1F600 in UTF-8 although UTF-16 puts the emoji first.
        #expect(try ObjectKey("\u{E000}") < ObjectKey("😀"))
    }

    @Test("NFC and NFD spellings are distinct keys")
    func normalisationForms() throws {
        #expect(Self.nfc == Self.nfd, "Swift String equality is canonical equivalence")
        let composed = try ObjectKey(Self.nfc)
        let decomposed = try ObjectKey(Self.nfd)
        #expect(Array(composed.rawValue.utf8) != Array(decomposed.rawValue.utf8))
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(composed < decomposed || decomposed < composed)
        #expect(composed == (try ObjectKey(Self.nfc)))
    }

    @Test("Segments and the last segment split on /")
    func segments() throws {
        let key = try ObjectKey("users/1/photo.jpg")
        #expect(key.segments == ["users", "1", "photo.jpg"])
        #expect(key.lastSegment == "photo.jpg")
        #expect(try ObjectKey("single").lastSegment == "single")
        let combining = try ObjectKey("a/\u{301}b")
        #expect(combining.segments.map { Array($0.utf8) } == [Array("a".utf8), Array("\u{301}b".utf8)])
        #expect(Array(combining.lastSegment.utf8) == Array("\u{301}b".utf8))
    }

    @Test("A prefix and a name join into one validated key")
    func prefixJoin() throws {
        #expect(try ObjectKey(prefix: "users/1/", "a.txt").rawValue == "users/1/a.txt")
        let error = #expect(throws: BuckiaError.self) { try ObjectKey(prefix: "users/1/", "../a.txt") }
        #expect(error?.code == .invalidPath)
    }

    /// Names as a folder listing meets them, in a folder or at the root.
    static let listedNames: [(String, String)] = [
        ("", "a.txt"), ("photos/", "a.txt"), ("photos/", "."), ("photos/", ".."), ("photos/", "..."), ("", ".env"), ("", "..x"),
        ("photos/", ""), ("photos/", "a/b"), ("photos/", "a\u{0}b"), ("photos/", String(repeating: "n", count: 1017)),
        ("photos/", String(repeating: "n", count: 1018)), ("photos/", "cafe\u{301}"),
    ]

    @Test("A name joined to a checked folder is accepted and refused exactly as the whole key would be", arguments: listedNames)
    func folderAndName(_ folder: String, _ name: String) throws {
        let whole = Result { try ObjectKey(folder + name) }
        let joined = Result { try ObjectKey(folder: folder, name: name) }
        switch (whole, joined) {
        case (.success(let expected), .success(let key)): #expect(key == expected && key.rawValue.utf8.elementsEqual(expected.rawValue.utf8))
        case (.failure(let expected), .failure(let error)): #expect("\(error)" == "\(expected)")
        default: Issue.record("\(folder.debugDescription) + \(name.debugDescription): whole \(whole), joined \(joined)")
        }
    }

    @Test("Keys encode as a JSON string and decoding validates")
    func codable() throws {
        let key = try ObjectKey("a/b c/\(Self.nfd)")
        let json = try JSONEncoder().encode([key])
        let decoded = try JSONDecoder().decode([ObjectKey].self, from: json)
        #expect(decoded.map { Array($0.rawValue.utf8) } == [Array(key.rawValue.utf8)])
        let error = #expect(throws: BuckiaError.self) {
            try JSONDecoder().decode([ObjectKey].self, from: Data(#"["a/../b"]"#.utf8))
        }
        #expect(error?.code == .invalidPath)
    }
}
