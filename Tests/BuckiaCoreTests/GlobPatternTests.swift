import BuckiaCore
import Testing

/// One row of a matching table: does `pattern` match `path`?
struct Glob: Sendable, CustomTestStringConvertible {
    let pattern: String
    let path: String
    let matches: Bool

    init(_ pattern: String, _ path: String, _ matches: Bool) {
        self.pattern = pattern
        self.path = path
        self.matches = matches
    }

    var testDescription: String { "\(pattern.debugDescription) \(matches ? "matches" : "rejects") \(path.debugDescription)" }
}

struct GlobPatternTests {
    static let star: [Glob] = [
        Glob("*.jpg", "a.jpg", true), Glob("*.jpg", ".jpg", true), Glob("*.jpg", "a.jpeg", false),
        Glob("*.jpg", "a.jpg.png", false), Glob("*", "anything", true), Glob("a*b", "ab", true),
        Glob("a*b", "axyzb", true), Glob("a*b", "axyzc", false), Glob("*.JPG", "a.jpg", false),
        Glob("photos/*", "photos/a.jpg", true), Glob("photos/*", "photos/2024/a.jpg", false),
        Glob("photos/*.jpg", "photos/x/a.jpg", false), Glob("p/a*b", "p/a/b", false),
        Glob("*/*", "a/b", true), Glob("*/*", "a/b/c", false), Glob("a/*/c", "a//c", true),
    ]

    static let globstar: [Glob] = [
        Glob("**", "a", true), Glob("**", "a/b/c", true),
        Glob("**/*.jpg", "a.jpg", true), Glob("**/*.jpg", "x/y/a.jpg", true),
        Glob("**/*.jpg", "x/y/a.png", false),
        Glob("a/**", "a/b", true), Glob("a/**", "a/b/c/d", true), Glob("a/**", "a", false),
        Glob("a/**", "b/a/c", false),
        Glob("a/**/b", "a/b", true), Glob("a/**/b", "a/x/b", true), Glob("a/**/b", "a/x/y/b", true),
        Glob("a/**/b", "a/xb", false), Glob("a/**/b", "a/x/b/c", false), Glob("a/**/b", "b", false),
        Glob("a/**/b/**/c", "a/1/b/2/3/c", true), Glob("a/**/b/**/c", "a/1/2/3/c", false),
        Glob("**/node_modules/**", "node_modules/x", true),
        Glob("**/node_modules/**", "a/b/node_modules/c/d.js", true),
        Glob("**/node_modules/**", "a/node_modules_x/c", false),
        Glob("src/**/*.swift", "src/a.swift", true), Glob("src/**/*.swift", "src/x/y/a.swift", true),
        Glob("src/**/*.swift", "lib/src/a.swift", false),
        // `**` that is not a whole segment is an ordinary `*`.
        Glob("a/**b", "a/xb", true), Glob("a/**b", "a/x/b", false),
    ]

    static let singleCharacterAndSets: [Glob] = [
        Glob("?.txt", "a.txt", true), Glob("?.txt", "ab.txt", false), Glob("?.txt", ".txt", false),
        Glob("x/a?c", "x/abc", true), Glob("x/a?c", "x/a/c", false),
        Glob("[abc].txt", "b.txt", true), Glob("[abc].txt", "d.txt", false),
        Glob("[a-z]1", "m1", true), Glob("[a-z]1", "M1", false), Glob("[0-9][0-9]", "42", true),
        Glob("[!a]x", "bx", true), Glob("[!a]x", "ax", false),
        Glob("[^a]x", "bx", true), Glob("[^a]x", "ax", false),
        Glob("d/a[!b]c", "d/a/c", false), Glob("[]]", "]", true), Glob("[!]]", "a", true),
        Glob("[!]]", "]", false), Glob("[a-]", "-", true), Glob("[-a]", "-", true),
        Glob("[a\\-z]", "-", true), Glob("[a\\-z]", "z", true), Glob("[a\\-z]", "m", false),
        Glob("[\\]]", "]", true), Glob("[a-cx-z]", "y", true), Glob("[a-cx-z]", "m", false),
    ]

    static let braces: [Glob] = [
        Glob("*.{jpg,png}", "a.jpg", true), Glob("*.{jpg,png}", "a.png", true),
        Glob("*.{jpg,png}", "a.gif", false), Glob("{a,b}{c,d}", "bd", true),
        Glob("{a,b}{c,d}", "ab", false), Glob("{a,{b,c}}x", "cx", true), Glob("{a,{b,c}}x", "dx", false),
        Glob("{src,lib/core}/*.swift", "src/a.swift", true),
        Glob("{src,lib/core}/*.swift", "lib/core/a.swift", true),
        Glob("{src,lib/core}/*.swift", "lib/a.swift", false),
        Glob("{,x}a", "a", true), Glob("{,x}a", "xa", true), Glob("a{b}c", "abc", true),
        Glob("[{]", "{", true), Glob("[,]", ",", true), Glob("{a\\,b,c}", "a,b", true),
        Glob("{a\\,b,c}", "c", true), Glob("{a\\,b,c}", "b", false), Glob("a}", "a}", true),
    ]

    static let escapes: [Glob] = [
        Glob("\\*", "*", true), Glob("\\*", "a", false), Glob("\\?", "?", true),
        Glob("\\?", "a", false), Glob("a\\[b", "a[b", true), Glob("\\\\", "\\", true),
        Glob("\\{a,b\\}", "{a,b}", true), Glob("\\{a,b\\}", "a", false),
    ]

    static let anchoring: [Glob] = [
        Glob("b.txt", "b.txt", true), Glob("b.txt", "a/b.txt", true), Glob("b.txt", "x/y/z/b.txt", true),
        Glob("b.txt", "a/b.txt/c", false), Glob("a/b.txt", "a/b.txt", true),
        Glob("a/b.txt", "x/a/b.txt", false), Glob("/a/b.txt", "a/b.txt", true),
        Glob("a/b.txt", "/a/b.txt", true), Glob("/b.txt", "a/b.txt", false), Glob("/b.txt", "b.txt", true),
    ]

    static let unicode: [Glob] = [
        Glob("café*", "café-1", true), Glob("日本/*.txt", "日本/メモ.txt", true), Glob("*.📷", "x/y.📷", true),
        // `?` is one Character: a base letter with a combining mark, or a ZWJ emoji sequence.
        Glob("caf?", "cafe\u{301}", true), Glob("?", "👨‍👩‍👧", true), Glob("??", "👨‍👩‍👧", false),
        Glob("[α-ω]", "λ", true), Glob("[α-ω]", "Λ", false),
        // Matching compares Characters, so canonically equivalent spellings match each other.
        Glob("caf\u{e9}.txt", "cafe\u{301}.txt", true),
    ]

    @Test("* matches within one segment", arguments: star)
    func starMatching(_ row: Glob) throws { try check(row) }

    @Test("** matches zero or more whole segments", arguments: globstar)
    func globstarMatching(_ row: Glob) throws { try check(row) }

    @Test("? and [sets] match one character, never /", arguments: singleCharacterAndSets)
    func setsMatching(_ row: Glob) throws { try check(row) }

    @Test("{alternatives} expand, nested and with / inside", arguments: braces)
    func bracesMatching(_ row: Glob) throws { try check(row) }

    @Test("Backslash escapes a special character", arguments: escapes)
    func escapesMatching(_ row: Glob) throws { try check(row) }

    @Test("A pattern without / matches the last segment; with / it is anchored", arguments: anchoring)
    func anchoringMatching(_ row: Glob) throws { try check(row) }

    @Test("Matching is by Unicode characters", arguments: unicode)
    func unicodeMatching(_ row: Glob) throws { try check(row) }

    private func check(_ row: Glob) throws {
        let pattern = try GlobPattern(row.pattern)
        #expect(pattern.matches(row.path) == row.matches)
        #expect(pattern.description == row.pattern)
    }

    @Test(
        "Malformed patterns are invalid configuration",
        arguments: [
            "[abc", "[", "[!", "a{b,c", "{", "{a,{b,c}", "abc\\", "\\", "[z-a]", "[9-0]",
            String(repeating: "{a,b}", count: 9), "{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b}",
        ])
    func invalid(pattern: String) {
        let error = #expect(throws: BuckiaError.self) { try GlobPattern(pattern) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.path == pattern)
    }

    @Test("Exactly 256 alternatives is allowed")
    func maximumAlternatives() throws {
        let pattern = try GlobPattern(String(repeating: "{a,b}", count: 8))
        #expect(pattern.matches("abababab"))
        #expect(!pattern.matches("abababa"))
    }

    @Test("Pathological patterns finish without exponential backtracking")
    func pathological() throws {
        let subject = String(repeating: "a", count: 10_000)
        #expect(!(try GlobPattern("*a*a*a*a*a*a*a*b").matches(subject)))
        #expect(try GlobPattern("*a*a*a*a*a*a*a*a").matches(subject))
        let deep = Array(repeating: "a", count: 2_000).joined(separator: "/")
        #expect(!(try GlobPattern("**/a/**/a/**/a/**/b").matches(deep)))
        #expect(try GlobPattern("**/a/**/a/**/a/**/a").matches(deep))
    }
}
