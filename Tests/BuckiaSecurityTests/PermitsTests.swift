import BuckiaCore
import BuckiaSecurity
import Foundation
import Testing

/// The seed's sync token: read + list on `u1/`, write on `u1/inbound/`; plus a delete grant
/// on `u1/tmp/`, a grant with a non-ASCII folder, to test look-alikes against, and a deliver
/// grant on another user's `inbound/`.
private let grants: StorageGrants = [
    StoragePermissions.readOnly.restrictToPath("u1/"),
    StoragePermissions.write.restrictToPath("u1/inbound/"),
    StoragePermissions.delete.restrictToPath("u1/tmp/"),
    StoragePermissions.all.restrictToPath("caf\u{E9}/"),
    StoragePermissions.read.restrictToPath("docs/readme.txt"),
    StoragePermissions.deliver.restrictToPath("u2/inbound/"),
    StoragePermissions.readOnly.restrictToPath("home/*/public/"),
    StoragePermissions.deliver.restrictToPath("home/*/inbound/"),
]

/// One row of the path-trick table: an operation on a key and the decision it must get.
struct PathTrick: Sendable, CustomTestStringConvertible {
    enum Expected: Sendable { case permit, unsafe, lookAlike, notGranted }
    var operation: StorageOperation
    var key: String
    var expected: Expected
    var note: String

    init(_ operation: StorageOperation, _ key: String, _ expected: Expected, _ note: String) {
        self.operation = operation
        self.key = key
        self.expected = expected
        self.note = note
    }

    var testDescription: String { "\(operation) \(key.debugDescription): \(expected) (\(note))" }
}

private let longKey = "u1/" + String(repeating: "a/", count: 510) + "xy"  // 1,025 bytes

let pathTricks: [PathTrick] = [
    // Plain cases: what the grants say.
    .init(.read, "u1/a.txt", .permit, "inside the read grant"),
    .init(.read, "u1/x/y/z.txt", .permit, "deep inside"),
    .init(.list, "u1/", .permit, "listing the granted folder"),
    .init(.list, "u1/ph", .permit, "listing a partial name inside the grant"),
    .init(.list, "u1/photos/", .permit, "listing a subfolder"),
    .init(.write, "u1/inbound/2Abc.sqlite", .permit, "write in inbound"),
    .init(.write, "u1/inbound/sub/x", .permit, "write deeper in inbound"),
    .init(.write, "u1/a.txt", .notGranted, "write outside inbound"),
    .init(.write, "u1/inbound", .notGranted, "the folder's own name is not inside it"),
    .init(.delete, "u1/inbound/x", .notGranted, "no delete on inbound"),
    .init(.delete, "u1/tmp/x", .permit, "delete grant"),
    .init(.read, "u1/inbound/x", .permit, "read covers inbound too"),
    .init(.read, "docs/readme.txt", .permit, "a grant on one object"),
    .init(.read, "docs/readme.txt2", .notGranted, "one object's grant is not a prefix by bytes"),
    .init(.read, "docs/other.txt", .notGranted, "a sibling of the granted object"),
    .init(.list, "docs/readme.txt", .notGranted, "listing the object's name would show readme.txt2"),
    // Sibling prefixes: segments, not bytes.
    .init(.read, "u10/a.txt", .notGranted, "u1/ never grants u10/"),
    .init(.read, "u1", .notGranted, "the folder name itself"),
    .init(.read, "u1x/a", .notGranted, "a longer sibling"),
    .init(.read, "u/a", .notGranted, "a shorter sibling"),
    .init(.list, "u1", .notGranted, "listing u1 would show u10/"),
    .init(.list, "u", .notGranted, "listing a shorter prefix"),
    .init(.list, "", .notGranted, "listing the whole bucket"),
    .init(.write, "u1/inbound2/x", .notGranted, "a sibling of inbound"),
    .init(.write, "u1/inboundx", .notGranted, "inbound's name continued"),
    // Dot segments and escapes.
    .init(.read, "u1/../u2/a", .unsafe, "a .. segment"),
    .init(.read, "u1/./a", .unsafe, "a . segment"),
    .init(.read, "u1/..", .unsafe, "ending in .."),
    .init(.write, "u1/inbound/../../u2/x", .unsafe, "climbing out of inbound"),
    .init(.list, "u1/../", .unsafe, "listing through .."),
    .init(.read, "../u1/a", .unsafe, "leading .."),
    .init(.read, "u1/%2e%2e/u2/a", .unsafe, "percent-encoded .."),
    .init(.read, "u1/%2E%2E/u2/a", .unsafe, "upper-case percent-encoded .."),
    .init(.read, "u1/.%2e/u2/a", .unsafe, "half-encoded .."),
    .init(.read, "u1%2f..%2fu2/a", .unsafe, "encoded slashes"),
    .init(.read, "u1/a%2Fb", .unsafe, "an encoded slash inside a name"),
    .init(.read, "u1/a%5cb", .unsafe, "an encoded backslash"),
    .init(.read, "u1/%252e%252e/x", .unsafe, "double-encoded dots"),
    .init(.read, "u1/a%00b", .unsafe, "an encoded NUL"),
    .init(.read, "u1/100%25", .unsafe, "an encoded percent (double decoding)"),
    .init(.read, "u1/100% done", .permit, "a bare percent that encodes nothing"),
    .init(.read, "u1/a%20b", .permit, "an encoded space is just text to S3"),
    // Separators and empty segments.
    .init(.read, "u1//a", .unsafe, "an empty segment"),
    .init(.read, "/u1/a", .unsafe, "absolute"),
    .init(.read, "u1/a/", .unsafe, "an object key ending in a slash"),
    .init(.read, "", .unsafe, "empty"),
    .init(.read, "u1\\..\\u2\\a", .unsafe, "backslashes as separators"),
    .init(.read, "u1/a\\b", .unsafe, "a backslash in a name"),
    .init(.list, "u1//", .unsafe, "listing with an empty segment"),
    // Control characters.
    .init(.read, "u1/a\u{0}b", .unsafe, "NUL"),
    .init(.read, "u1/a\nb", .unsafe, "newline"),
    .init(.read, "u1/a\tb", .unsafe, "tab"),
    .init(.read, "u1/a\u{7F}b", .unsafe, "DEL"),
    .init(.read, "u1/a\u{85}b", .unsafe, "a C1 control (NEL)"),
    .init(.read, "u1/a\rb", .unsafe, "carriage return"),
    // Trailing dots and spaces (Windows and SMB strip them).
    .init(.read, "u1./a", .unsafe, "a trailing dot folds u1. into u1"),
    .init(.read, "u1 /a", .unsafe, "a trailing space"),
    .init(.read, "u1/a.", .unsafe, "a name ending in a dot"),
    .init(.read, "u1/.hidden", .permit, "a leading dot is a name"),
    .init(.read, "u1/...", .unsafe, "three dots end in a dot"),
    .init(.read, "u1/a b", .permit, "an inner space is fine"),
    // Unicode: compatibility look-alikes of separators and dots.
    .init(.read, "u1/\u{2025}/u2/a", .unsafe, "two dot leader is .. under NFKC"),
    .init(.read, "u1/\u{FF0E}\u{FF0E}/u2/a", .unsafe, "fullwidth dots are .. under NFKC"),
    .init(.read, "u1/a\u{FF0F}..\u{FF0F}b", .unsafe, "fullwidth solidus is / under NFKC"),
    .init(.read, "u1\u{FF0F}a", .lookAlike, "fullwidth solidus: one segment by bytes, u1/a under NFKC"),
    .init(.read, "u1/a\u{FE68}b", .unsafe, "small reverse solidus is \\ under NFKC"),
    .init(.read, "u1/a\u{FF3C}b", .unsafe, "fullwidth reverse solidus"),
    .init(.read, "u1/\u{2024}", .unsafe, "one dot leader is . under NFKC"),
    .init(.read, "u1/\u{FF61}x", .permit, "halfwidth ideographic full stop is not a dot"),
    // Unicode: NFC/NFD and compatibility spellings of a granted prefix.
    .init(.read, "caf\u{E9}/menu", .permit, "the grant's own (NFC) spelling"),
    .init(.read, "cafe\u{301}/menu", .lookAlike, "the NFD spelling of a granted prefix"),
    .init(.write, "cafe\u{301}/x", .lookAlike, "NFD write"),
    .init(.list, "cafe\u{301}/", .lookAlike, "NFD listing"),
    .init(.read, "u\u{FF11}/a", .lookAlike, "fullwidth digit one: u１ is u1 under NFKC"),
    .init(.read, "\u{FF55}1/a", .lookAlike, "fullwidth u"),
    .init(.read, "u\u{2081}/a", .lookAlike, "subscript one is 1 under NFKC"),
    .init(.read, "u1/caf\u{E9}", .permit, "non-ASCII below a granted prefix"),
    .init(.read, "u1/cafe\u{301}", .permit, "NFD below a granted prefix is the user's own name"),
    // Letter case.
    .init(.read, "U1/a", .lookAlike, "upper-case folder"),
    .init(.read, "CAF\u{C9}/menu", .lookAlike, "upper-case non-ASCII folder"),
    .init(.read, "u1/A.TXT", .permit, "case below the grant is the user's business"),
    .init(.read, "\u{212A}/a", .notGranted, "Kelvin sign is k, granted nowhere"),
    // Lengths.
    .init(.read, longKey, .unsafe, "over 1,024 bytes"),
    .init(.read, "u1/" + String(repeating: "a", count: 1021), .permit, "exactly 1,024 bytes"),
    // Operations without grants.
    .init(.delete, "u1/a", .notGranted, "no delete outside tmp"),
    .init(.list, "u1/tmp/", .permit, "list via the read-only grant"),
    .init(.write, "caf\u{E9}/x", .permit, "all on the NFC folder"),
    // Deliver: create a new object directly in the granted folder, and nothing else.
    .init(.deliver, "u2/inbound/2Abc.sqlite", .permit, "a delivery directly in the granted folder"),
    .init(.deliver, "u2/inbound/sub/x.sqlite", .notGranted, "a deliver grant reaches no folder below its own"),
    .init(.deliver, "u2/inbound", .notGranted, "the folder's own name is not in it"),
    .init(.deliver, "u2/inboundx/y", .notGranted, "a longer sibling of the folder"),
    .init(.deliver, "u2/a.sqlite", .notGranted, "the folder above"),
    .init(.write, "u2/inbound/x.sqlite", .notGranted, "deliver never allows a write that could replace"),
    .init(.read, "u2/inbound/x.sqlite", .notGranted, "deliver never reads"),
    .init(.list, "u2/inbound/", .notGranted, "deliver never lists"),
    .init(.delete, "u2/inbound/x.sqlite", .notGranted, "deliver never deletes"),
    .init(.deliver, "u2/inbound/../../u1/x", .unsafe, "climbing out of the delivery folder"),
    .init(.deliver, "u2/inbound/\u{FF0F}x", .unsafe, "a fullwidth solidus is an empty segment under NFKC"),
    .init(.deliver, "u2/inbound/a\u{FF0F}b", .lookAlike, "a fullwidth solidus is a folder below the grant under NFKC"),
    .init(.deliver, "U2/inbound/x", .lookAlike, "an upper-case user folder"),
    .init(.deliver, "u1/inbound/x.sqlite", .permit, "write implies deliver"),
    .init(.deliver, "u1/inbound/sub/x", .permit, "a delivery under write reaches as far as the write"),
    .init(.deliver, "u1/a.txt", .notGranted, "read and list do not deliver"),
    // A * segment: any one segment.
    .init(.read, "home/u1/public/a.jpg", .permit, "* stands for u1"),
    .init(.read, "home/u2/public/x/y", .permit, "* stands for u2, deep below public/"),
    .init(.read, "home/u1/private/a", .notGranted, "the segment after * is literal"),
    .init(.read, "home/public/a", .notGranted, "* needs a segment of its own"),
    .init(.read, "home/u1/x/public/a", .notGranted, "* is one segment, not several"),
    .init(.read, "home//public/a", .unsafe, "an empty segment is not one * matches"),
    .init(.read, "home/../public/a", .unsafe, ".. is refused before any grant"),
    .init(.read, "HOME/u1/public/a", .lookAlike, "the literal segments keep their spelling"),
    .init(.list, "home/u1/public/", .permit, "listing one user's public folder"),
    .init(.list, "home/u1/", .notGranted, "listing a user's whole folder"),
    .init(.list, "home/", .notGranted, "listing every user"),
    .init(.deliver, "home/u2/inbound/2Abc.sqlite", .permit, "deliver into any user's inbound"),
    .init(.deliver, "home/u2/inbound/sub/x.sqlite", .notGranted, "not below any user's inbound"),
    .init(.write, "home/u2/inbound/2Abc.sqlite", .notGranted, "a wildcard deliver grant never writes"),
]

@Suite("StorageGrants.permits: the path-trick table")
struct PermitsTests {
    @Test("The table has at least 60 path tricks")
    func tableSize() {
        #expect(pathTricks.count >= 60)
    }

    @Test("Each path trick gets the decision it must", arguments: pathTricks)
    func decision(_ trick: PathTrick) {
        let decision = grants.decide(trick.operation, key: trick.key)
        switch (trick.expected, decision) {
        case (.permit, .permitted): break
        case (.unsafe, .refused(let refusal)) where refusal.kind == .unsafeKey: break
        case (.lookAlike, .refused(let refusal)) where refusal.kind == .lookAlike: break
        case (.notGranted, .refused(let refusal)) where refusal.kind == .notGranted: break
        default: Issue.record("expected \(trick.expected), got \(decision)")
        }
        #expect(grants.permits(trick.operation, key: trick.key) == (trick.expected == .permit))
    }

    @Test("A refusal's message names the operation, the key and the reason, and maps to a typed error")
    func refusalMessage() throws {
        let error = #expect(throws: AccessRefusal.self) { try grants.check(.write, key: "u1/a.txt") }
        #expect(error?.description == #"write on "u1/a.txt" is not permitted: no grant that allows write covers it (granted: u1/inbound/, caf\#u{E9}/)."#)
        #expect(error?.error.code == .permissionDenied)
        let unsafe = #expect(throws: AccessRefusal.self) { try grants.check(.read, key: "u1/../u2") }
        #expect(unsafe?.error.code == .invalidPath)
    }

    @Test(
        "A grant whose prefix breaks the key rules grants nothing and does not validate",
        arguments: ["../", "u1/../", "u1//", "/u1/", "u1\\", "u1/%2e%2e/", "u1./", "a\u{0}/", "\u{FF41}dmin/", "cafe\u{301}/", "\u{212A}/"])
    func badGrant(_ prefix: String) {
        let bad: StorageGrants = [StoragePermissions.all.restrictToPath(prefix)]
        #expect(throws: BuckiaError.self) { try bad.validate() }
        #expect(!bad.permits(.read, key: "u1/a"))
        #expect(!bad.permits(.read, key: prefix + "x"))
        #expect(!bad.permits(.list, key: prefix))
    }

    @Test(
        "A refused grant's message is one sentence naming the prefix and why",
        arguments: [("/", "its prefix \"/\" is refused, as it is only a slash"), ("a/../b/", "its prefix \"a/../b/\" is refused, as it"), ("cafe\u{301}/", "is refused, as it is not in Unicode NFKC form")])
    func refusalMessage(_ prefix: String, _ fragment: String) throws {
        let error = try #require(throws: BuckiaError.self) { try ([StoragePermissions.read.restrictToPath(prefix)] as StorageGrants).validate() }
        #expect(error.message.contains(fragment), "\(error.message)")
        #expect(!error.message.contains("its prefix it"), "\(error.message)")
    }

    @Test("A deliver grant names a folder: on one object's name it does not validate")
    func deliverOnAFolder() throws {
        #expect(throws: BuckiaError.self) { try ([StoragePermissions.deliver.restrictToPath("u2/inbound")] as StorageGrants).validate() }
        try ([StoragePermissions.deliver.restrictToPath("u2/inbound/")] as StorageGrants).validate()
        try ([StoragePermissions([.write, .deliver]).restrictToPath("u2/inbound/x")] as StorageGrants).validate()
        try ([StoragePermissions.deliver.restrictToPath("")] as StorageGrants).validate()
        #expect(StorageGrants([StoragePermissions.deliver.restrictToPath("")]).permits(.deliver, key: "x.sqlite"))
        #expect(!StorageGrants([StoragePermissions.deliver.restrictToPath("")]).permits(.deliver, key: "a/x.sqlite"))
    }

    @Test("An empty prefix covers everything; everything still refuses unsafe keys")
    func everything() {
        #expect(StorageGrants.everything.permits(.delete, key: "any/key"))
        #expect(StorageGrants.everything.permits(.list, key: ""))
        #expect(!StorageGrants.everything.permits(.read, key: "a/../b"))
    }

    @Test("Grants round-trip through JSON as {prefix, allow}, and unknown permissions are refused")
    func coding() throws {
        let data = try JSONEncoder().encode(grants)
        #expect(try JSONDecoder().decode(StorageGrants.self, from: data) == grants)
        let bad = Data(#"[{"prefix":"u1/","allow":["read","admin"]}]"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(StorageGrants.self, from: bad) }
    }

    @Test("nested(under:) scopes every grant to a user's folder")
    func nested() {
        let scoped = ([StoragePermissions.readOnly.restrictToPath(""), StoragePermissions.write.restrictToPath("inbound/")] as StorageGrants)
            .nested(under: "u7/")
        #expect(scoped.permits(.read, key: "u7/a"))
        #expect(scoped.permits(.write, key: "u7/inbound/a"))
        #expect(!scoped.permits(.write, key: "u7/a"))
        #expect(!scoped.permits(.read, key: "u70/a"))
        let unslashed = ([StoragePermissions.read.restrictToPath("docs/")] as StorageGrants).nested(under: "users/u1")
        #expect(unslashed.grants.map(\.prefix) == ["users/u1/docs/"])
    }
}
