import Foundation

/// Matches tokens against a subject by dynamic programming over suffixes: O(tokens ×
/// characters) time and O(characters) memory, however many `*` the pattern holds.
struct GlobMatcher {
    let tokens: [GlobPattern.Token]
    let subject: [Character]

    init(tokens: [GlobPattern.Token], subject: [Character]) {
        self.tokens = tokens
        self.subject = subject
    }

    /// Whether the whole subject matches the whole token list.
    func run() -> Bool {
        let count = subject.count
        // `next[s]`: whether tokens[t + 1...] match subject[s...]; starts as the empty pattern.
        var next = [Bool](repeating: false, count: count + 1)
        next[count] = true
        var current = next
        for t in stride(from: tokens.count - 1, through: 0, by: -1) {
            switch tokens[t] {
            case .literal(let c):
                current[count] = false
                for s in 0..<count { current[s] = subject[s] == c && next[s + 1] }
            case .anyCharacter:
                current[count] = false
                for s in 0..<count { current[s] = subject[s] != "/" && next[s + 1] }
            case .set(let set, let negated):
                current[count] = false
                for s in 0..<count { current[s] = subject[s] != "/" && set.contains(subject[s]) != negated && next[s + 1] }
            case .anyRun:
                // Zero characters, or one non-'/' character and then this token again.
                current[count] = next[count]
                for s in stride(from: count - 1, through: 0, by: -1) {
                    current[s] = next[s] || (subject[s] != "/" && current[s + 1])
                }
            case .anySegments:
                if t + 1 == tokens.count {
                    // A trailing `**` also matches everything below.
                    for s in 0...count { current[s] = true }
                } else {
                    // Zero segments, or whole segments up to any later '/'.
                    var afterSomeSlash = false
                    current[count] = next[count]
                    for s in stride(from: count - 1, through: 0, by: -1) {
                        if subject[s] == "/", next[s + 1] { afterSomeSlash = true }
                        current[s] = next[s] || afterSomeSlash
                    }
                }
            }
            swap(&current, &next)
        }
        return next[0]
    }
}
