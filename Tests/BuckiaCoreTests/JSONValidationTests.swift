import BuckiaCore
import Foundation
import Testing

struct JSONValidationTests {
    /// A document the validator must accept.
    struct Valid: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]

        init(_ name: String, _ text: String) {
            self.name = name
            self.bytes = Array(text.utf8)
        }

        var testDescription: String { name }
    }

    /// A document the validator must refuse, with the kind of error it must report.
    struct Invalid: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let kind: JSONSyntaxError.Kind

        init(_ name: String, _ text: String, _ kind: JSONSyntaxError.Kind) {
            self.init(name, bytes: Array(text.utf8), kind)
        }

        init(_ name: String, bytes: [UInt8], _ kind: JSONSyntaxError.Kind) {
            self.name = name
            self.bytes = bytes
            self.kind = kind
        }

        var testDescription: String { name }
    }

    /// A refused document with the exact place its error must name.
    struct Located: Sendable, CustomTestStringConvertible {
        let text: String
        let kind: JSONSyntaxError.Kind
        let line: Int
        let column: Int

        init(_ text: String, _ kind: JSONSyntaxError.Kind, line: Int, column: Int) {
            self.text = text
            self.kind = kind
            self.line = line
            self.column = column
        }

        var testDescription: String { text.debugDescription }
    }

    static let limit = JSONValidation.defaultMaximumDepth

    static func nestedArrays(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    static func nestedObjects(_ depth: Int) -> String {
        String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
    }

    static let valid: [Valid] = [
        Valid("empty object", "{}"),
        Valid("empty array", "[]"),
        Valid("empty containers with inner space", "[ { \n } , [ \t ] ]"),
        Valid("surrounding whitespace", " \t\r\n{}\r\n \t"),
        Valid("CRLF document", "{\r\n  \"a\": [1, 2],\r\n  \"b\": null\r\n}\r\n"),
        Valid("object", #"{"a":1,"b":"two","c":[true,false,null],"d":{"e":{}}}"#),
        Valid("array of every type", #"[1, -2.5e3, "s", true, false, null, {}, [], {"k": [{}]}]"#),
        Valid("top-level string", #""hello""#),
        Valid("top-level empty string", #""""#),
        Valid("top-level true", "true"),
        Valid("top-level false", "false"),
        Valid("top-level null", "null"),
        Valid("top-level number with whitespace", " 42 "),
        Valid("zero", "0"),
        Valid("negative zero", "-0"),
        Valid("integer", "123"),
        Valid("negative integer", "-123"),
        Valid("fraction", "1.5"),
        Valid("negative zero fraction", "-0.0"),
        Valid("zero fraction", "0.25"),
        Valid("exponent", "1e10"),
        Valid("capital exponent", "1E10"),
        Valid("exponent with plus", "1e+10"),
        Valid("exponent with minus", "1e-10"),
        Valid("fraction and exponent", "1.5e-3"),
        Valid("zero exponent", "0e0"),
        Valid("everything", "-1.25E+2"),
        Valid("numbers in array", "[0,-0,1,10,0.5,-0.5,2e3,2E-3,2e+3,123456789]"),
        Valid("simple escapes", #""\" \\ \/ \b \f \n \r \t""#),
        Valid("unicode escapes", #""\u00e9 \u4E2D \ud83d\ude00 \u0041""#),
        Valid("raw UTF-8", "\"h\u{E9}llo \u{4E2D}\u{6587} \u{1F600} \u{10FFFF}\""),
        Valid("DEL is not a control character", "\"a\u{7F}b\""),
        Valid("keys with escapes", #"{"a\"b":1,"\u0063":2}"#),
        Valid("arrays nested exactly at the limit", nestedArrays(limit)),
        Valid("objects nested exactly at the limit", nestedObjects(limit)),
    ]

    static let invalid: [Invalid] = [
        Invalid("trailing comma in array", "[1,2,]", .trailingComma),
        Invalid("trailing comma in object", #"{"a":1,}"#, .trailingComma),
        Invalid("trailing comma before whitespace", "[1, \n ]", .trailingComma),
        Invalid("100,000-deep arrays", String(repeating: "[", count: 100_000), .tooDeep(limit: limit)),
        Invalid("100,000-deep objects", String(repeating: #"{"a":"#, count: 100_000), .tooDeep(limit: limit)),
        Invalid("arrays one deeper than the limit", nestedArrays(limit + 1), .tooDeep(limit: limit)),
        Invalid("objects one deeper than the limit", nestedObjects(limit + 1), .tooDeep(limit: limit)),
        Invalid("leading zero", "01", .invalidNumber),
        Invalid("negative leading zero", "-01", .invalidNumber),
        Invalid("double zero in array", "[00]", .invalidNumber),
        Invalid("dot without digits", "1.", .invalidNumber),
        Invalid("dot then exponent", "1.e5", .invalidNumber),
        Invalid("exponent without digits", "1e", .invalidNumber),
        Invalid("exponent sign without digits", "[1e+]", .invalidNumber),
        Invalid("lone minus", "-", .invalidNumber),
        Invalid("minus without digits", "-a", .invalidNumber),
        Invalid("hex", "0x1F", .invalidNumber),
        Invalid("two dots", "1.5.3", .invalidNumber),
        Invalid("minus Infinity", "-Infinity", .invalidNumber),
        Invalid("leading dot", ".5", .unexpectedCharacter(".")),
        Invalid("leading plus", "+1", .unexpectedCharacter("+")),
        Invalid("NaN", "NaN", .unexpectedCharacter("N")),
        Invalid("Infinity", "[Infinity]", .unexpectedCharacter("I")),
        Invalid("single quotes", "'single'", .unexpectedCharacter("'")),
        Invalid("line comment", "// note\n{}", .unexpectedCharacter("/")),
        Invalid("block comment inside", #"{"a":1 /* note */}"#, .unexpectedCharacter("/")),
        Invalid("comment after the value", "{} // note", .trailingContent),
        Invalid("hash comment", "# note\n{}", .unexpectedCharacter("#")),
        Invalid("raw tab in string", "\"a\tb\"", .controlCharacterInString),
        Invalid("raw newline in string", "\"a\nb\"", .controlCharacterInString),
        Invalid("raw NUL in string", "\"a\u{0}b\"", .controlCharacterInString),
        Invalid("bad escape \\x", #""\x41""#, .invalidEscape),
        Invalid("capital \\U", #""\U0041""#, .invalidEscape),
        Invalid("short \\u12", #""\u12""#, .invalidEscape),
        Invalid("non-hex in \\u", #""\u12G4""#, .invalidEscape),
        Invalid("invalid UTF-8 byte FF", bytes: [0x22, 0xFF, 0x22], .invalidUTF8),
        Invalid("overlong C0 AF", bytes: [0x22, 0xC0, 0xAF, 0x22], .invalidUTF8),
        Invalid("overlong E0 80 AF", bytes: [0x22, 0xE0, 0x80, 0xAF, 0x22], .invalidUTF8),
        Invalid("UTF-8-encoded surrogate", bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], .invalidUTF8),
        Invalid("above U+10FFFF", bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], .invalidUTF8),
        Invalid("lead byte F5", bytes: [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], .invalidUTF8),
        Invalid("lone continuation byte", bytes: [0x22, 0x80, 0x22], .invalidUTF8),
        Invalid("sequence cut short", bytes: [0x22, 0xE2, 0x82, 0x22], .invalidUTF8),
        Invalid("invalid UTF-8 outside a string", bytes: [0x5B, 0xFF, 0x5D], .invalidUTF8),
        Invalid("truncated array", "[1,2", .unexpectedEnd),
        Invalid("truncated after comma", "[1,", .unexpectedEnd),
        Invalid("truncated after colon", #"{"a":"#, .unexpectedEnd),
        Invalid("truncated after key", #"{"a""#, .unexpectedEnd),
        Invalid("lone open bracket", "[", .unexpectedEnd),
        Invalid("lone open brace", "{", .unexpectedEnd),
        Invalid("truncated literal", "tru", .unexpectedEnd),
        Invalid("truncated string", #""abc"#, .unterminatedString),
        Invalid("truncated escape", #""abc\"#, .unterminatedString),
        Invalid("truncated unicode escape", #""\u12"#, .unterminatedString),
        Invalid("missing colon", #"{"a" 1}"#, .unexpectedCharacter("1")),
        Invalid("number as key", "{1:2}", .unexpectedCharacter("1")),
        Invalid("missing comma", "[1 2]", .unexpectedCharacter("2")),
        Invalid("missing value", #"{"a":}"#, .unexpectedCharacter("}")),
        Invalid("leading comma", "[,1]", .unexpectedCharacter(",")),
        Invalid("double comma", "[1,,2]", .unexpectedCharacter(",")),
        Invalid("mismatched brackets", "[1}", .unexpectedCharacter("}")),
        Invalid("mismatched braces", "{]", .unexpectedCharacter("]")),
        Invalid("misspelled literal", "[tru]", .unexpectedCharacter("]")),
        Invalid("capitalised literal", "True", .unexpectedCharacter("T")),
        Invalid("two objects", "{}{}", .trailingContent),
        Invalid("two numbers", "1 2", .trailingContent),
        Invalid("extra bracket", "[]]", .trailingContent),
        Invalid("NUL after the value", "{}\u{0}", .trailingContent),
        Invalid("empty data", "", .empty),
        Invalid("only whitespace", " \r\n\t ", .empty),
        Invalid("byte order mark", "\u{FEFF}{}", .unexpectedCharacter("\u{FEFF}")),
        Invalid("form feed as whitespace", "\u{0C}{}", .unexpectedCharacter("\u{0C}")),
        Invalid("no-break space as whitespace", "\u{A0}{}", .unexpectedCharacter("\u{A0}")),
    ]

    static let located: [Located] = [
        Located("{\n  \"a\": [\n    1,\n  ]\n}", .trailingComma, line: 3, column: 6),
        Located(nestedArrays(129), .tooDeep(limit: 128), line: 1, column: 129),
        Located("\"a\tb\"", .controlCharacterInString, line: 1, column: 3),
        Located("{\r\n\"a\":x}", .unexpectedCharacter("x"), line: 2, column: 5),
        Located("[\r1,\r\r2 3]", .unexpectedCharacter("3"), line: 4, column: 3),
        Located("[1,\n\"abc", .unterminatedString, line: 2, column: 1),
        Located("[1,\n", .unexpectedEnd, line: 2, column: 1),
        Located("\"\u{E9}\\q\"", .invalidEscape, line: 1, column: 4),
        Located("", .empty, line: 1, column: 1),
    ]

    @Test("Accepts valid JSON", arguments: valid)
    func accepts(_ document: Valid) throws {
        try JSONValidation.validate(Data(document.bytes))
    }

    @Test("JSONSerialization also accepts every valid document", arguments: valid)
    func agreesWithJSONSerialization(_ document: Valid) throws {
        _ = try JSONSerialization.jsonObject(with: Data(document.bytes), options: .fragmentsAllowed)
    }

    @Test("Refuses invalid JSON with the right kind of error", arguments: invalid)
    func refuses(_ document: Invalid) {
        #expect(throws: JSONSyntaxError.self) { try JSONValidation.validate(Data(document.bytes)) }
        #expect(kind(of: document.bytes) == document.kind)
    }

    @Test("Errors name the line and column of the problem", arguments: located)
    func locates(_ document: Located) throws {
        let error = try #require(syntaxError(in: Array(document.text.utf8)))
        #expect(error.kind == document.kind)
        #expect(error.line == document.line)
        #expect(error.column == document.column)
        #expect(error.description.contains("line \(document.line), column \(document.column)"))
    }

    @Test("Every description is one sentence that names the line and column", arguments: invalid)
    func describes(_ document: Invalid) throws {
        let error = try #require(syntaxError(in: document.bytes))
        #expect(error.description.contains("at line \(error.line), column \(error.column)"))
        #expect(!error.description.contains("\n"))
        #expect(error.line >= 1 && error.column >= 1)
    }

    @Test("Descriptions read as plain English")
    func descriptionWording() throws {
        let deep = try #require(syntaxError(in: Array(Self.nestedArrays(129).utf8)))
        #expect(deep.description == "nesting deeper than 128 levels at line 1, column 129")
        let comma = try #require(syntaxError(in: Array("{\n  \"a\": 1,\n}".utf8)))
        #expect(comma.description == "a comma before '}' at line 2, column 9 (JSON allows no trailing comma)")
        let bom = try #require(syntaxError(in: Array("\u{FEFF}{}".utf8)))
        #expect(bom.description.contains("U+FEFF"))
    }

    @Test("The depth limit is the caller's to choose")
    func customDepth() {
        #expect(kind(of: Array("[]".utf8), maximumDepth: 0) == .tooDeep(limit: 0))
        #expect(kind(of: Array("1".utf8), maximumDepth: 0) == nil)
        #expect(kind(of: Array("{}".utf8), maximumDepth: -5) == .tooDeep(limit: 0))
        #expect(kind(of: Array("[[1]]".utf8), maximumDepth: 1) == .tooDeep(limit: 1))
        #expect(kind(of: Array(Self.nestedArrays(1000).utf8), maximumDepth: 1000) == nil)
        #expect(kind(of: Array(Self.nestedArrays(1001).utf8), maximumDepth: 1000) == .tooDeep(limit: 1000))
    }

    @Test("A million-deep document is refused without recursion")
    func millionDeep() {
        let bytes = Array(String(repeating: "[{\"a\":", count: 500_000).utf8)
        #expect(kind(of: bytes) == .tooDeep(limit: Self.limit))
        #expect(kind(of: Array(Self.nestedArrays(1_000_000).utf8), maximumDepth: 1_000_000) == nil)
    }

    @Test("A slice of Data is validated from its own start")
    func dataSlice() throws {
        let data = Data("\u{FEFF}[1, 2]".utf8)
        let slice = data.dropFirst(3)
        try JSONValidation.validate(slice)
        #expect(throws: JSONSyntaxError.self) { try JSONValidation.validate(data) }
    }

    @Test("A large document validates")
    func large() throws {
        var text = "["
        text.reserveCapacity(1_100_000)
        for index in 0..<50_000 {
            text += index == 0 ? "" : ","
            text += #"{"n":\#(index),"s":"x\u00e9\#(index)"}"#
        }
        text += "]"
        try JSONValidation.validate(Data(text.utf8))
    }

    private func syntaxError(in bytes: [UInt8], maximumDepth: Int = JSONValidation.defaultMaximumDepth) -> JSONSyntaxError? {
        do {
            try JSONValidation.validate(Data(bytes), maximumDepth: maximumDepth)
            return nil
        } catch let error as JSONSyntaxError {
            return error
        } catch {
            Issue.record("validate threw something other than JSONSyntaxError: \(error)")
            return nil
        }
    }

    private func kind(of bytes: [UInt8], maximumDepth: Int = JSONValidation.defaultMaximumDepth) -> JSONSyntaxError.Kind? {
        syntaxError(in: bytes, maximumDepth: maximumDepth)?.kind
    }
}
