import Foundation

/// RFC 3986 percent-encoding as storage APIs want it in paths, headers and query values: every
/// byte of the UTF-8 but the unreserved characters (`A–Z a–z 0–9 - _ . ~`) becomes `%XX`
/// (uppercase hex) — `+` and space included, since servers disagree on what a bare `+` means.
package enum PercentEncoding {
    /// `text` encoded; with `keepingSlash`, `/` stays as it is (a path).
    package static func encode(_ text: String, keepingSlash: Bool = false) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlash:
                out.append("/")
            default:
                out.append("%")
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return out
    }

    private static let hexDigits = Array("0123456789ABCDEF")
}
