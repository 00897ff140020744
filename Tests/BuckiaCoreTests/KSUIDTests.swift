import BuckiaCore
import Foundation
import Testing

@Suite("KSUID")
struct KSUIDTests {
    /// Segment's README example (`ksuid -f inspect`), and the smallest and largest KSUIDs.
    @Test("Published values decode to their bytes and encode back", arguments: [
        ("0ujtsYcgvSTl8PAuAdqWYSMnLOv", "0669F7EFB5A1CD34B5F99D1154FB6853345C9735"),
        ("000000000000000000000000000", "0000000000000000000000000000000000000000"),
        ("aWgEPTl1tmebfsQzFP4bxwgy80V", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"),
    ])
    func vectors(_ text: String, _ hex: String) throws {
        let id = try #require(KSUID(text))
        #expect(Hex.encode(id.bytes).uppercased() == hex)
        #expect(id.description == text)
    }

    @Test("The README example's time is 107608047 seconds after the KSUID epoch")
    func timestamp() throws {
        let id = try #require(KSUID("0ujtsYcgvSTl8PAuAdqWYSMnLOv"))
        #expect(id.timestamp == 107_608_047)
        #expect(id.date == Date(timeIntervalSince1970: 1_400_000_000 + 107_608_047))
    }

    @Test("Text that is not a KSUID is refused", arguments: [
        "", "0ujtsYcgvSTl8PAuAdqWYSMnLO", "0ujtsYcgvSTl8PAuAdqWYSMnLOvX", "0ujtsYcgvSTl8PAuAdqWYSMnLO-", "aWgEPTl1tmebfsQzFP4bxwgy80W",
        "zzzzzzzzzzzzzzzzzzzzzzzzzzz",
    ])
    func invalid(_ text: String) {
        #expect(KSUID(text) == nil)
    }

    @Test("Later KSUIDs sort after earlier ones, as text and as values")
    func ordering() throws {
        let early = try KSUID(date: Date(timeIntervalSince1970: 1_700_000_000), payload: [UInt8](repeating: 0xFF, count: 16))
        let late = try KSUID(date: Date(timeIntervalSince1970: 1_700_000_001), payload: [UInt8](repeating: 0, count: 16))
        #expect(early < late)
        #expect(early.description < late.description)
        #expect(KSUID(late.description) == late)
        #expect(throws: BuckiaError.self) { try KSUID(date: Date(timeIntervalSince1970: 0)) }
    }
}
