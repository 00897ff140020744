/// Conversions and sums of numbers that come from outside (a URL's expiry, a listed size, a
/// user's time), where Swift's own conversion would trap on a value out of range.
extension Int64 {
    /// `value` rounded toward zero, or the nearest bound when it lies outside `Int64` (NaN is 0).
    ///
    /// `Int64(Double(Int64.max))` traps: the `Double` rounds up to 2^63. Every conversion of
    /// an outside number goes through this instead.
    package init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 9_223_372_036_854_775_807.0 {
            self = .max
        } else if value <= -9_223_372_036_854_775_808.0 {
            self = .min
        } else {
            self = Int64(value.rounded(.towardZero))
        }
    }

    /// `self + other`, or the nearest bound when the sum does not fit.
    package func addingSaturated(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

extension String {
    /// The text with every control character (C0, DEL, C1) written as a visible escape
    /// (`\e`, `\r`, `\x07`), and every bidirectional formatting character as `\u{202E}`: for
    /// text from outside (a server's error message, a listed name, a token's claims) that goes
    /// into an error or onto a terminal, where an escape sequence could rewrite the screen or
    /// the window title, and a right-to-left override could show `txt.exe` as `exe.txt`
    /// (CVE-2021-42574's "Trojan Source"). Backslashes stay as they are.
    package var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || (0x80..<0xA0).contains($0.value) || Self.isBidiControl($0) }) else {
            return self
        }
        var result = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case "\u{1B}": result += "\\e"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\x" + String(repeating: "0", count: max(0, 2 - hex.count)) + hex
            case _ where Self.isBidiControl(scalar):
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Unicode's bidirectional formatting characters: the Arabic letter mark, the left-to-right
    /// and right-to-left marks, the embeddings and overrides (U+202A–U+202E) and the isolates
    /// (U+2066–U+2069).
    static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
