import Foundation

extension String {
    /// Whether two field names are the same but for ASCII case, compared byte by byte: no
    /// lowercased copies, where a request's fields are looked up many times.
    package func equalsIgnoringASCIICase(_ other: String) -> Bool {
        let (mine, theirs) = (utf8, other.utf8)
        guard mine.count == theirs.count else { return false }
        return zip(mine, theirs).allSatisfy { a, b in
            a == b || (a ^ b == 0x20 && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(a | 0x20))
        }
    }
}
