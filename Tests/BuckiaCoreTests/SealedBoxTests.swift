import BuckiaCore
import Foundation
import Testing

/// The stored form of an AES-GCM message: `nonce (12) ‖ ciphertext ‖ tag (16)`.
struct SealedBoxTests {
    @Test("The combined form is nonce, ciphertext, tag, and splits back into the same parts")
    func layout() throws {
        let box = AESGCM.SealedBox(nonce: Array(repeating: 1, count: 12), ciphertext: [2, 3, 4], tag: Array(repeating: 5, count: 16))
        #expect(Array(box.combined) == Array(repeating: 1, count: 12) + [2, 3, 4] + Array(repeating: 5, count: 16))
        #expect(try AESGCM.SealedBox(combined: box.combined) == box)
    }

    @Test("Combined data too short for a nonce and tag is corrupt", arguments: [0, 1, 12, 16, 27])
    func shortCombined(length: Int) {
        let error = #expect(throws: BuckiaError.self) { try AESGCM.SealedBox(combined: Data(count: length)) }
        #expect(error?.code == .corrupt)
    }

    @Test("Combined data of exactly nonce plus tag splits into an empty ciphertext")
    func minimalCombined() throws {
        let data = Data((0..<28).map { UInt8($0) })
        let box = try AESGCM.SealedBox(combined: data)
        #expect(box.nonce == Array(0..<12))
        #expect(box.ciphertext.isEmpty)
        #expect(box.tag == Array(12..<28))
        #expect(box.combined == data)
    }

    @Test("Combined data from a slice with a non-zero start index splits correctly")
    func slicedCombined() throws {
        let key = [UInt8](repeating: 3, count: 32)
        let box = try AESGCM.seal(Data("slice".utf8), key: key)
        let padded = Data([0xff, 0xff]) + box.combined
        let opened = try AESGCM.open(AESGCM.SealedBox(combined: padded.dropFirst(2)), key: key)
        #expect(opened == Data("slice".utf8))
    }

    @Test("A box that is cut short or extended no longer opens", arguments: [-1, 1])
    func resized(delta: Int) throws {
        let key = [UInt8](repeating: 4, count: 32)
        let combined = try AESGCM.seal(Data("resize me".utf8), key: key).combined
        let changed = delta < 0 ? combined.dropLast(-delta) : combined + Data(count: delta)
        let error = #expect(throws: BuckiaError.self) { try AESGCM.open(AESGCM.SealedBox(combined: changed), key: key) }
        #expect(error?.code == .corrupt)
    }
}
