import Foundation

/// A strict RFC 8259 syntax check for JSON that comes from outside (configuration files, server
/// responses, manifests), run before the bytes reach `JSONDecoder` or `JSONSerialization`.
///
/// Foundation's parsers recurse once per nesting level, so a document of 100,000 `[` crashes the
/// process with a stack overflow instead of throwing; on Linux they also accept some text that is
/// not JSON (trailing commas, for one). This validator walks the bytes once, without recursion
/// (an explicit stack of open containers, bounded by the depth limit), so it cannot overflow the
/// stack, and it throws a ``JSONSyntaxError`` that names the line and column of the first problem.
///
/// It checks syntax only: it does not build values, compare duplicate keys, or check that a
/// `\uXXXX` escape pairs its surrogates.
package enum JSONValidation {
    /// Default maximum depth of nested arrays/objects: 128, far more than any configuration or
    /// API response needs, and far less than what overflows a thread's stack in Foundation.
    package static let defaultMaximumDepth = 128

    /// Checks `data` is one JSON text per RFC 8259, so that a parser given it afterwards sees
    /// nothing it could crash on or silently misread; throws ``JSONSyntaxError`` otherwise.
    ///
    /// The text must be UTF-8 without a byte order mark, hold exactly one value of any type
    /// (surrounded only by space, tab, LF or CR), and nest arrays and objects at most
    /// `maximumDepth` deep (a negative limit counts as 0: only a scalar passes). Literals, numbers,
    /// strings and escapes follow the RFC grammar exactly: no comments, trailing commas, single
    /// quotes, leading `+` or zeros, `NaN`/`Infinity`, hex, raw control characters in strings, or
    /// bytes that are not valid UTF-8. Runs in time linear in `data.count`.
    package static func validate(_ data: Data, maximumDepth: Int = defaultMaximumDepth) throws {
        let error: JSONSyntaxError? = data.withUnsafeBytes { bytes in
            var scanner = Scanner(bytes: bytes, limit: max(0, maximumDepth))
            guard let failure = scanner.firstFailure() else { return nil }
            let (line, column) = location(of: failure.offset, in: bytes)
            return JSONSyntaxError(kind: failure.kind, line: line, column: column, closingBracket: failure.closingBracket)
        }
        if let error { throw error }
    }

    /// The 1-based line and byte column of `offset`; LF, CR LF and a lone CR each end a line.
    private static func location(of offset: Int, in bytes: UnsafeRawBufferPointer) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        var index = 0
        let end = min(offset, bytes.count)
        while index < end {
            let byte = bytes[index]
            if byte == ASCII.lineFeed || (byte == ASCII.carriageReturn && (index + 1 >= bytes.count || bytes[index + 1] != ASCII.lineFeed)) {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }
        return (line, offset - lineStart + 1)
    }

    /// A problem found by the scanner: where (a byte offset) and what.
    private struct Failure {
        var offset: Int
        var kind: JSONSyntaxError.Kind
        var closingBracket: UInt8? = nil
    }

    /// What the scanner expects next, after skipping whitespace.
    private enum State {
        /// A value: at the top, or after `:`.
        case value
        /// A value or `]`, right after `[`.
        case firstElement
        /// A value after `,` in an array (`]` here is a trailing comma).
        case nextElement
        /// A key or `}`, right after `{`.
        case firstKey
        /// A key after `,` in an object (`}` here is a trailing comma).
        case nextKey
        /// The `:` after a key.
        case colon
        /// A complete value: next comes `,`, the closing bracket, or (at the top) the end.
        case afterValue
    }

    private enum Container: UInt8 {
        case array
        case object
    }

    private enum ASCII {
        static let space: UInt8 = 0x20
        static let tab: UInt8 = 0x09
        static let lineFeed: UInt8 = 0x0A
        static let carriageReturn: UInt8 = 0x0D
        static let quote = UInt8(ascii: "\"")
        static let backslash = UInt8(ascii: "\\")
        static let comma = UInt8(ascii: ",")
        static let colon = UInt8(ascii: ":")
        static let openBracket = UInt8(ascii: "[")
        static let closeBracket = UInt8(ascii: "]")
        static let openBrace = UInt8(ascii: "{")
        static let closeBrace = UInt8(ascii: "}")
        static let minus = UInt8(ascii: "-")
        static let plus = UInt8(ascii: "+")
        static let dot = UInt8(ascii: ".")
        static let zero = UInt8(ascii: "0")
        static let one = UInt8(ascii: "1")
        static let nine = UInt8(ascii: "9")
        static let lowerE = UInt8(ascii: "e")
        static let upperE = UInt8(ascii: "E")
    }

    /// The single pass over the bytes. Every loop advances `index`, so it ends; every read is
    /// checked against `count` first.
    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        let count: Int
        let limit: Int
        var index = 0
        var stack: [Container] = []
        /// Where the last `,` was, to point a trailing-comma error at it.
        var commaOffset = 0

        init(bytes: UnsafeRawBufferPointer, limit: Int) {
            self.bytes = bytes
            self.count = bytes.count
            self.limit = limit
            stack.reserveCapacity(min(limit, 64))
        }

        mutating func firstFailure() -> Failure? {
            skipWhitespace()
            guard index < count else { return Failure(offset: index, kind: .empty) }
            var state = State.value
            while true {
                skipWhitespace()
                guard index < count else {
                    if state == .afterValue && stack.isEmpty { return nil }
                    return Failure(offset: index, kind: .unexpectedEnd)
                }
                let byte = bytes[index]
                switch state {
                case .value:
                    if let failure = value(byte, &state) { return failure }
                case .firstElement:
                    if byte == ASCII.closeBracket {
                        index += 1
                        stack.removeLast()
                        state = .afterValue
                    } else if let failure = value(byte, &state) {
                        return failure
                    }
                case .nextElement:
                    if byte == ASCII.closeBracket {
                        return Failure(offset: commaOffset, kind: .trailingComma, closingBracket: byte)
                    }
                    if let failure = value(byte, &state) { return failure }
                case .firstKey, .nextKey:
                    if byte == ASCII.quote {
                        if let failure = string() { return failure }
                        state = .colon
                    } else if byte == ASCII.closeBrace {
                        if state == .nextKey {
                            return Failure(offset: commaOffset, kind: .trailingComma, closingBracket: byte)
                        }
                        index += 1
                        stack.removeLast()
                        state = .afterValue
                    } else {
                        return unexpected()
                    }
                case .colon:
                    guard byte == ASCII.colon else { return unexpected() }
                    index += 1
                    state = .value
                case .afterValue:
                    guard let top = stack.last else { return Failure(offset: index, kind: .trailingContent) }
                    if byte == ASCII.comma {
                        commaOffset = index
                        index += 1
                        state = top == .array ? .nextElement : .nextKey
                    } else if (byte == ASCII.closeBracket && top == .array) || (byte == ASCII.closeBrace && top == .object) {
                        index += 1
                        stack.removeLast()
                    } else {
                        return unexpected()
                    }
                }
            }
        }

        /// Scans the value starting with `byte` at `index`, or opens its container.
        private mutating func value(_ byte: UInt8, _ state: inout State) -> Failure? {
            switch byte {
            case ASCII.openBracket, ASCII.openBrace:
                guard stack.count < limit else { return Failure(offset: index, kind: .tooDeep(limit: limit)) }
                index += 1
                if byte == ASCII.openBracket {
                    stack.append(.array)
                    state = .firstElement
                } else {
                    stack.append(.object)
                    state = .firstKey
                }
                return nil
            case ASCII.quote:
                state = .afterValue
                return string()
            case ASCII.minus, ASCII.zero...ASCII.nine:
                state = .afterValue
                return number()
            case UInt8(ascii: "t"):
                state = .afterValue
                return literal("true")
            case UInt8(ascii: "f"):
                state = .afterValue
                return literal("false")
            case UInt8(ascii: "n"):
                state = .afterValue
                return literal("null")
            default:
                return unexpected()
            }
        }

        private mutating func skipWhitespace() {
            while index < count {
                let byte = bytes[index]
                guard byte == ASCII.space || byte == ASCII.lineFeed || byte == ASCII.carriageReturn || byte == ASCII.tab else { return }
                index += 1
            }
        }

        /// The character at `index` as an unexpected one, or `invalidUTF8` when its bytes are not
        /// a UTF-8 character at all.
        private func unexpected() -> Failure {
            let length = utf8Length(at: index)
            guard length > 0 else { return Failure(offset: index, kind: .invalidUTF8) }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + length)]), as: UTF8.self)
            return Failure(offset: index, kind: .unexpectedCharacter(text))
        }

        /// `true`, `false` or `null`, exactly; `index` is at its first byte.
        private mutating func literal(_ word: StaticString) -> Failure? {
            let length = word.utf8CodeUnitCount
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: length)
            for offset in 0..<length {
                guard index < count else { return Failure(offset: index, kind: .unexpectedEnd) }
                guard bytes[index] == expected[offset] else { return unexpected() }
                index += 1
            }
            return nil
        }

        private func isDigit(_ offset: Int) -> Bool {
            offset < count && bytes[offset] >= ASCII.zero && bytes[offset] <= ASCII.nine
        }

        private mutating func skipDigits() {
            while isDigit(index) { index += 1 }
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, then no letter, digit, `.`, `+` or
        /// `-` right after it (`01`, `0x1F`, `1.5.3` are one bad number, not a number and junk).
        private mutating func number() -> Failure? {
            let start = index
            let invalid = Failure(offset: start, kind: .invalidNumber)
            if bytes[index] == ASCII.minus { index += 1 }
            guard index < count else { return invalid }
            if bytes[index] == ASCII.zero {
                index += 1
            } else if bytes[index] >= ASCII.one && bytes[index] <= ASCII.nine {
                skipDigits()
            } else {
                return invalid
            }
            if index < count && bytes[index] == ASCII.dot {
                index += 1
                guard isDigit(index) else { return invalid }
                skipDigits()
            }
            if index < count && (bytes[index] == ASCII.lowerE || bytes[index] == ASCII.upperE) {
                index += 1
                if index < count && (bytes[index] == ASCII.plus || bytes[index] == ASCII.minus) { index += 1 }
                guard isDigit(index) else { return invalid }
                skipDigits()
            }
            if index < count {
                let next = bytes[index]
                let letter = (next | 0x20) >= UInt8(ascii: "a") && (next | 0x20) <= UInt8(ascii: "z")
                if letter || isDigit(index) || next == ASCII.dot || next == ASCII.plus || next == ASCII.minus { return invalid }
            }
            return nil
        }

        /// A string from the `"` at `index` to its closing `"`.
        private mutating func string() -> Failure? {
            let start = index
            index += 1
            while true {
                // The common case: plain ASCII that needs no attention.
                while index < count {
                    let byte = bytes[index]
                    if byte == ASCII.quote || byte == ASCII.backslash || byte < 0x20 || byte >= 0x80 { break }
                    index += 1
                }
                guard index < count else { return Failure(offset: start, kind: .unterminatedString) }
                let byte = bytes[index]
                if byte == ASCII.quote {
                    index += 1
                    return nil
                } else if byte == ASCII.backslash {
                    guard index + 1 < count else { return Failure(offset: start, kind: .unterminatedString) }
                    switch bytes[index + 1] {
                    case ASCII.quote, ASCII.backslash, UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                        UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 2
                    case UInt8(ascii: "u"):
                        for offset in (index + 2)..<(index + 6) {
                            guard offset < count else { return Failure(offset: start, kind: .unterminatedString) }
                            guard Self.isHexDigit(bytes[offset]) else { return Failure(offset: index, kind: .invalidEscape) }
                        }
                        index += 6
                    default:
                        return Failure(offset: index, kind: .invalidEscape)
                    }
                } else if byte < 0x20 {
                    return Failure(offset: index, kind: .controlCharacterInString)
                } else {
                    let length = utf8Length(at: index)
                    guard length > 0 else { return Failure(offset: index, kind: .invalidUTF8) }
                    index += length
                }
            }
        }

        private static func isHexDigit(_ byte: UInt8) -> Bool {
            switch byte {
            case ASCII.zero...ASCII.nine, UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
            default: false
            }
        }

        /// The length of the well-formed UTF-8 character at `offset` (Unicode table 3-7: no
        /// overlong forms, no surrogates, nothing above U+10FFFF), or 0 when it is not one.
        private func utf8Length(at offset: Int) -> Int {
            guard offset < count else { return 0 }
            let lead = bytes[offset]
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0x00...0x7F: return 1
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return 0  // 0x80...0xC1 (continuations, overlong leads), 0xF5...0xFF
            }
            guard count - offset >= length else { return 0 }
            let second = bytes[offset + 1]
            guard second >= low && second <= high else { return 0 }
            for next in (offset + 2)..<(offset + length) where bytes[next] & 0xC0 != 0x80 {
                return 0
            }
            return length
        }
    }
}

/// Why ``JSONValidation/validate(_:maximumDepth:)`` refused a text, and where: the first problem
/// only, with its 1-based line and byte column, so a person can find it in an editor.
package struct JSONSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What is wrong.
    package enum Kind: Equatable, Sendable {
        /// An array or object opens deeper than `limit` levels (reported at that `[` or `{`).
        case tooDeep(limit: Int)
        /// A `,` right before `]` or `}` (reported at the comma).
        case trailingComma
        /// A character that cannot stand where it is (a comment's `/`, a `'`, a byte order mark,
        /// a missing comma or colon, a misspelled literal); the character itself.
        case unexpectedCharacter(String)
        /// A string with no closing `"` (reported at its opening quote).
        case unterminatedString
        /// A `\` escape other than `\" \\ \/ \b \f \n \r \t \uXXXX` (reported at the backslash).
        case invalidEscape
        /// A raw byte below 0x20 (tab, newline, …) inside a string; JSON wants it escaped.
        case controlCharacterInString
        /// A number outside the RFC 8259 grammar (reported at its first character).
        case invalidNumber
        /// Bytes that are not well-formed UTF-8.
        case invalidUTF8
        /// The text ends inside a value, array or object.
        case unexpectedEnd
        /// Something other than whitespace after the one top-level value.
        case trailingContent
        /// No value at all: the text is empty or only whitespace.
        case empty
    }

    /// What is wrong.
    package let kind: Kind
    /// The 1-based line of the problem (LF, CR LF and CR end lines).
    package let line: Int
    /// The 1-based column of the problem, counted in bytes from the start of its line.
    package let column: Int
    /// For a trailing comma, the `]` or `}` it stands before; only for the description.
    private let closingBracket: UInt8?

    init(kind: Kind, line: Int, column: Int, closingBracket: UInt8? = nil) {
        self.kind = kind
        self.line = line
        self.column = column
        self.closingBracket = closingBracket
    }

    /// Errors are equal when they name the same problem at the same place.
    package static func == (lhs: JSONSyntaxError, rhs: JSONSyntaxError) -> Bool {
        lhs.kind == rhs.kind && lhs.line == rhs.line && lhs.column == rhs.column
    }

    /// One plain English sentence naming the problem and its line and column.
    package var description: String {
        let place = "at line \(line), column \(column)"
        switch kind {
        case .tooDeep(let limit):
            return "nesting deeper than \(limit) \(limit == 1 ? "level" : "levels") \(place)"
        case .trailingComma:
            let bracket = closingBracket.map { "'\(Character(Unicode.Scalar($0)))'" } ?? "a closing bracket"
            return "a comma before \(bracket) \(place) (JSON allows no trailing comma)"
        case .unexpectedCharacter(let text):
            return "an unexpected \(Self.name(of: text)) \(place)\(Self.hint(for: text))"
        case .unterminatedString:
            return "a string with no closing quote, starting \(place)"
        case .invalidEscape:
            return #"an invalid escape sequence \#(place) (JSON allows only \" \\ \/ \b \f \n \r \t and \u followed by four hex digits)"#
        case .controlCharacterInString:
            return #"a raw control character inside a string \#(place) (JSON wants it escaped, such as \n or \t)"#
        case .invalidNumber:
            return "an invalid number \(place) (JSON numbers have no leading '+' or zeros, no hex, NaN or Infinity, and need digits after '.' and 'e')"
        case .invalidUTF8:
            return "bytes that are not valid UTF-8 \(place)"
        case .unexpectedEnd:
            return "an unexpected end of the text \(place) (a value, quote or closing bracket is missing)"
        case .trailingContent:
            return "more text after the JSON value \(place) (a JSON text holds exactly one value)"
        case .empty:
            return "no JSON value \(place) (the text is empty or only whitespace)"
        }
    }

    /// `'x'` for a visible ASCII character, `U+XXXX` for anything else.
    private static func name(of text: String) -> String {
        let scalars = text.unicodeScalars
        if scalars.count == 1, let scalar = scalars.first, scalar.value >= 0x21 && scalar.value <= 0x7E {
            return "'\(text)'"
        }
        let codes = scalars.map { scalar in
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        return "character " + codes.joined(separator: " ")
    }

    private static func hint(for text: String) -> String {
        switch text {
        case "/", "#": " (JSON allows no comments)"
        case "'": " (JSON strings use double quotes)"
        case "\u{FEFF}": " (a byte order mark, which JSON text must not start with)"
        default: ""
        }
    }
}

extension JSONValidation {
    /// Decodes `type` from JSON that came from outside (a server's answer, a file), after
    /// ``validate(_:maximumDepth:)``: a document nested past `maximumDepth` or otherwise
    /// malformed is refused before Foundation's decoder, which recurses once per level and
    /// accepts trailing commas, sees it.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` naming `what` and where the JSON breaks; what
    ///   `decoder` throws for a well-formed document of the wrong shape.
    package static func decode<T: Decodable>(
        _ type: T.Type, from data: Data, what: String, maximumDepth: Int = defaultMaximumDepth, decoder: JSONDecoder = JSONDecoder()
    ) throws -> T {
        do {
            try validate(data, maximumDepth: maximumDepth)
        } catch let error as JSONSyntaxError {
            throw BuckiaError(.corrupt, "\(what) is not valid JSON: \(error).", operation: "decode")
        }
        return try decoder.decode(type, from: data)
    }
}
