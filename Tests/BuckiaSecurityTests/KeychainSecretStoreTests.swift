import BuckiaCore
import Foundation
import Testing

@testable import BuckiaSecurity

/// What the Keychain store puts in an item and what it makes of an item it did not write. The
/// Security framework's calls are not here (no Keychain on this machine); the table answers as
/// they do, and the secret-store scenarios run over it as `StoreKind.keychain`.
@Suite("Keychain secret store: the item layout and damaged items")
struct KeychainSecretStoreTests {
    @Test("A secret is its item's data as UTF-8; the dates and metadata are JSON in kSecAttrGeneric, never the value")
    func layout() throws {
        let table = KeychainTable()
        let store = KeychainSecretStore(items: table)
        let secret = StoredSecret(
            value: "tok-\u{E9}-VALUE", expiresAt: Date(timeIntervalSince1970: 1_800_000_060), savedAt: Date(timeIntervalSince1970: 1_800_000_000),
            metadata: ["scope": "u1/"])
        try store.save(secret, for: "user/u1")
        let item = try #require(try table.item(account: "user/u1"))
        #expect(item.data == Data("tok-\u{E9}-VALUE".utf8))
        #expect(String(decoding: item.generic, as: UTF8.self) == #"{"expiresAt":1800000060,"metadata":{"scope":"u1\/"},"savedAt":1800000000,"version":1}"#)
        #expect(try store.load("user/u1") == secret)
        #expect(try store.entries() == [SecretEntry(context: "user/u1", expiresAt: secret.expiresAt, savedAt: secret.savedAt)])
    }

    @Test("A damaged item is a typed error that names the context and never the value", arguments: [
        ("data", Data([0xFF, 0xFE]), BuckiaError.Code.corrupt),
        ("generic", Data("not json".utf8), .corrupt),
        ("generic", Data(#"{"version":2,"savedAt":0}"#.utf8), .unsupported),
        ("generic", Data(), .corrupt),
    ])
    func damaged(_ part: String, _ bytes: Data, _ code: BuckiaError.Code) throws {
        let table = KeychainTable()
        let store = KeychainSecretStore(items: table)
        try store.save(StoredSecret(value: "SECRETVALUE", savedAt: Date(timeIntervalSince1970: 0)), for: "ctx")
        table.corrupt("ctx", data: part == "data" ? bytes : nil, generic: part == "generic" ? bytes : nil)
        let error = try #require(throws: BuckiaError.self) { try store.load("ctx") }
        #expect(error.code == code)
        #expect(error.message.contains("ctx") && !error.message.contains("SECRETVALUE"), "\(error.message)")
        // A listing still names it, with no dates known when its attributes cannot be read.
        #expect(try store.entries().map(\.context) == ["ctx"])
    }

    @Test("saveIfAbsent is the Keychain's add: it never replaces; save replaces")
    func absentAndReplace() throws {
        let store = KeychainSecretStore(items: KeychainTable())
        #expect(try store.saveIfAbsent(StoredSecret(value: "first", savedAt: Date(timeIntervalSince1970: 0)), for: "a"))
        #expect(try !store.saveIfAbsent(StoredSecret(value: "second", savedAt: Date(timeIntervalSince1970: 0)), for: "a"))
        #expect(try store.load("a")?.value == "first")
        try store.save(StoredSecret(value: "third", savedAt: Date(timeIntervalSince1970: 0)), for: "a")
        #expect(try store.load("a")?.value == "third")
    }
}
