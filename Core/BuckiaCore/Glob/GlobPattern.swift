/// A shell-style pattern over `/`-separated paths, for include and exclude rules.
///
/// | syntax | matches |
/// |---|---|
/// | `*` | any run of characters within one segment (not `/`) |
/// | `**` | as a whole segment: zero or more segments (`a/**/b` matches `a/b`, `a/x/y/b`) |
/// | `?` | one character other than `/` |
/// | `[abc]`, `[a-z]`, `[!a]` or `[^a]` | one character in (or not in) the set, never `/` |
/// | `{jpg,png}` | any of the comma-separated alternatives (may nest) |
/// | `\x` | the character `x` literally |
///
/// A pattern with no `/` matches the last segment at any depth (`*.jpg` matches
/// `a/b/c.jpg`). A pattern with a `/` is anchored at the root (`/photos/*` and `photos/*`
/// mean the same). Matching is by Unicode characters and case-sensitive.
/// Docs/Configuration.md has the full semantics and examples.
public struct GlobPattern: Hashable, Sendable, CustomStringConvertible {
    /// The pattern as written.
    public let pattern: String
    private let alternatives: [[Token]]
    private let matchesBasename: Bool

    /// The most alternatives `{…}` may expand to; more fails as invalid configuration.
    public static let maximumAlternatives = 256

    /// Parses a pattern.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for an unclosed `[` or `{`, a
    ///   trailing `\`, or too many alternatives.
    public init(_ pattern: String) throws {
        self.pattern = pattern
        var body = pattern
        if body.hasPrefix("/") { body.removeFirst() }
        matchesBasename = !pattern.contains("/")
        let expanded = try GlobPattern.expandBraces(Array(body), pattern: pattern)
        alternatives = try expanded.map { try GlobPattern.tokenize($0, pattern: pattern) }
    }

    public var description: String { pattern }

    /// Whether `path` (relative, `/`-separated) matches.
    public func matches(_ path: String) -> Bool {
        var subject = Substring(path)
        if subject.hasPrefix("/") { subject = subject.dropFirst() }
        if matchesBasename, let slash = subject.lastIndex(of: "/") {
            subject = subject[subject.index(after: slash)...]
        }
        let characters = Array(subject)
        return alternatives.contains { GlobMatcher(tokens: $0, subject: characters).run() }
    }

    // MARK: Parsing

    enum Token: Hashable, Sendable {
        case literal(Character)
        case anyRun            // *
        case anySegments       // **/ or a trailing /**
        case anyCharacter      // ?
        case set(CharacterSet, negated: Bool)
    }

    struct CharacterSet: Hashable, Sendable {
        var singles: [Character] = []
        var ranges: [ClosedRange<Character>] = []

        func contains(_ c: Character) -> Bool {
            singles.contains(c) || ranges.contains { $0.contains(c) }
        }
    }

    private static func invalid(_ pattern: String, _ reason: String) -> BuckiaError {
        BuckiaError(.invalidConfiguration, "The pattern \(pattern.debugDescription) is not valid: \(reason).", path: pattern)
    }

    private static func expandBraces(_ chars: [Character], pattern: String) throws -> [[Character]] {
        var index = 0
        var escaped = false
        var open: Int?
        var depth = 0
        var splits: [Int] = []
        while index < chars.count {
            let c = chars[index]
            if escaped {
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "[" {
                if let close = setEnd(chars, from: index) { index = close }
            } else if c == "{" {
                if depth == 0 { open = index }
                depth += 1
            } else if c == "," && depth == 1 {
                splits.append(index)
            } else if c == "}" && depth > 0 {
                depth -= 1
                if depth == 0, let start = open {
                    let head = Array(chars[..<start])
                    let tail = Array(chars[(index + 1)...])
                    let bounds = [start] + splits + [index]
                    var results: [[Character]] = []
                    for i in 0..<(bounds.count - 1) {
                        let option = Array(chars[(bounds[i] + 1)..<bounds[i + 1]])
                        for expanded in try expandBraces(head + option + tail, pattern: pattern) {
                            results.append(expanded)
                            if results.count > maximumAlternatives {
                                throw invalid(pattern, "its braces expand to more than \(maximumAlternatives) alternatives")
                            }
                        }
                    }
                    return results
                }
            }
            index += 1
        }
        if escaped { throw invalid(pattern, "it ends with an unfinished '\\' escape") }
        if depth > 0 { throw invalid(pattern, "a '{' is never closed") }
        return [chars]
    }

    /// The index of the `]` closing a set that opens at `start`, or nil if it never closes.
    private static func setEnd(_ chars: [Character], from start: Int) -> Int? {
        var index = start + 1
        if index < chars.count, chars[index] == "!" || chars[index] == "^" { index += 1 }
        if index < chars.count, chars[index] == "]" { index += 1 }
        while index < chars.count {
            if chars[index] == "\\" { index += 2; continue }
            if chars[index] == "]" { return index }
            index += 1
        }
        return nil
    }

    private static func tokenize(_ chars: [Character], pattern: String) throws -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < chars.count {
            let c = chars[index]
            switch c {
            case "\\":
                index += 1
                guard index < chars.count else { throw invalid(pattern, "it ends with an unfinished '\\' escape") }
                tokens.append(.literal(chars[index]))
            case "*":
                let atSegmentStart = index == 0 || chars[index - 1] == "/"
                if index + 1 < chars.count, chars[index + 1] == "*", atSegmentStart {
                    let next = index + 2
                    if next == chars.count {
                        tokens.append(.anySegments)
                        index = next
                        continue
                    }
                    if chars[next] == "/" {
                        tokens.append(.anySegments)
                        index = next + 1
                        continue
                    }
                }
                if tokens.last != .anyRun { tokens.append(.anyRun) }
            case "?":
                tokens.append(.anyCharacter)
            case "[":
                guard let close = setEnd(chars, from: index) else { throw invalid(pattern, "a '[' is never closed") }
                tokens.append(try parseSet(Array(chars[(index + 1)..<close]), pattern: pattern))
                index = close
            default:
                tokens.append(.literal(c))
            }
            index += 1
        }
        return tokens
    }

    private static func parseSet(_ body: [Character], pattern: String) throws -> Token {
        var body = body[...]
        var negated = false
        if let first = body.first, first == "!" || first == "^" {
            negated = true
            body = body.dropFirst()
        }
        // Escapes are resolved first, remembering which characters were escaped: `\-` is a
        // literal hyphen, never a range.
        var items: [(character: Character, escaped: Bool)] = []
        var index = body.startIndex
        while index < body.endIndex {
            if body[index] == "\\", index + 1 < body.endIndex {
                items.append((body[index + 1], true))
                index += 2
            } else {
                items.append((body[index], false))
                index += 1
            }
        }
        var set = CharacterSet()
        var i = 0
        while i < items.count {
            if i + 2 < items.count, items[i + 1] == ("-", false) {
                let (low, high) = (items[i].character, items[i + 2].character)
                guard low <= high else {
                    throw invalid(pattern, "the range \(low)-\(high) is backwards")
                }
                set.ranges.append(low...high)
                i += 3
            } else {
                set.singles.append(items[i].character)
                i += 1
            }
        }
        return .set(set, negated: negated)
    }
}
