import BuckiaCore
import Foundation
import Testing

@testable import BuckiaSecurity

#if canImport(Glibc)
import Glibc
#endif

/// A folder removed when the test ends.
final class ScratchFolder: @unchecked Sendable {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-secrets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The stores every scenario runs over.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, file, fileWithKey, fileWithPassphrase, keychain
    var testDescription: String { rawValue }

    static let key = Secret(Data(repeating: 7, count: 32).base64EncodedString())

    func make(_ folder: URL) -> any SecretStore {
        switch self {
        case .memory: InMemorySecretStore()
        case .file: FileSecretStore(folder: folder.appendingPathComponent("s"))
        case .fileWithKey: FileSecretStore(folder: folder.appendingPathComponent("s"), encryption: .key(Self.key))
        case .fileWithPassphrase: FileSecretStore(folder: folder.appendingPathComponent("s"), encryption: .passphrase("correct horse battery staple"))
        // The Keychain store over a table that answers as the Security framework's four calls
        // do (no Keychain exists here; on a Mac the same scenarios run over the real one).
        case .keychain: KeychainSecretStore(items: KeychainTable())
        }
    }
}

/// Generic-password items in memory, answering as `SecItemAdd`/`Update`/`CopyMatching`/`Delete`.
final class KeychainTable: KeychainItems {
    private let items = Locked<[String: KeychainItem]>([:])

    func add(_ item: KeychainItem) throws -> Bool {
        items.withLock { items in
            guard items[item.account] == nil else { return false }
            items[item.account] = item
            return true
        }
    }

    func update(_ item: KeychainItem) throws -> Bool {
        items.withLock { items in
            guard items[item.account] != nil else { return false }
            items[item.account] = item
            return true
        }
    }

    func item(account: String) throws -> KeychainItem? { items.withLock { $0[account] } }
    func delete(account: String) throws -> Bool { items.withLock { $0.removeValue(forKey: account) != nil } }
    func list() throws -> [(account: String, generic: Data)] { items.withLock { $0.values.map { ($0.account, $0.generic) } } }
    func corrupt(_ account: String, data: Data? = nil, generic: Data? = nil) {
        items.withLock { items in
            if let data { items[account]?.data = data }
            if let generic { items[account]?.generic = generic }
        }
    }
}

private let savedAt = Date(timeIntervalSince1970: 1_800_000_000)

@Suite("Secret stores")
struct SecretStoreTests {
    @Test("Save, load, replace, list and delete", arguments: StoreKind.allCases)
    func lifecycle(_ kind: StoreKind) throws {
        let scratch = try ScratchFolder()
        let store = kind.make(scratch.url)
        #expect(try store.load("a") == nil)
        #expect(try store.entries().isEmpty)
        let first = StoredSecret(value: "s3cr3t-one", expiresAt: savedAt.addingTimeInterval(60), savedAt: savedAt, metadata: ["algorithm": "EdDSA"])
        try store.save(first, for: "a")
        try store.save(StoredSecret(value: "s3cr3t-two", savedAt: savedAt), for: "remote:b2/applicationKey")
        #expect(try store.load("a") == first)
        try store.save(StoredSecret(value: "s3cr3t-three", savedAt: savedAt.addingTimeInterval(5)), for: "a")
        #expect(try store.load("a")?.value == "s3cr3t-three")
        #expect(try store.load("a")?.expiresAt == nil)
        #expect(try store.entries().map(\.context) == ["a", "remote:b2/applicationKey"])
        #expect(try store.delete("a"))
        #expect(try !store.delete("a"))
        #expect(try store.load("a") == nil)
        #expect(try store.load("remote:b2/applicationKey")?.value == "s3cr3t-two")
    }

    @Test("A reopened file store reads what an earlier instance saved", arguments: [StoreKind.file, .fileWithKey, .fileWithPassphrase])
    func persistence(_ kind: StoreKind) throws {
        let scratch = try ScratchFolder()
        try kind.make(scratch.url).save(StoredSecret(value: "persisted", expiresAt: savedAt, savedAt: savedAt), for: "ctx")
        let reopened = kind.make(scratch.url)
        #expect(try reopened.load("ctx") == StoredSecret(value: "persisted", expiresAt: savedAt, savedAt: savedAt))
    }

    @Test("Bad context names are refused", arguments: ["", "a b", "a\nb", "../x", "a/../b", "/a", "a/", "a//b", "./a", String(repeating: "a", count: 201), "caf\u{E9}"])
    func contextNames(_ context: String) throws {
        let scratch = try ScratchFolder()
        for kind in StoreKind.allCases {
            let store = kind.make(scratch.url)
            #expect(throws: BuckiaError.self) { try store.save(StoredSecret(value: "x", savedAt: savedAt), for: context) }
            #expect(throws: BuckiaError.self) { try store.load(context) }
        }
    }

    @Test("The file store's folder is 0700 and its file 0600")
    func modes() throws {
        let scratch = try ScratchFolder()
        let store = FileSecretStore(folder: scratch.url.appendingPathComponent("nested/secrets"))
        try store.save(StoredSecret(value: "x", savedAt: savedAt), for: "a")
        var info = stat()
        #expect(stat(store.folder.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(stat(store.file.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: store.folder.path).sorted()
        #expect(leftovers == ["secrets.json", "secrets.lock"])
    }

    @Test("A folder or file others can read is refused, as ssh does")
    func permissiveModes() throws {
        let scratch = try ScratchFolder()
        let store = FileSecretStore(folder: scratch.url.appendingPathComponent("s"))
        try store.save(StoredSecret(value: "x", savedAt: savedAt), for: "a")
        chmod(store.file.path, 0o644)
        let fileError = #expect(throws: BuckiaError.self) { try store.load("a") }
        #expect(fileError?.code == .permissionDenied)
        #expect(fileError?.message.contains("chmod 600") == true)
        chmod(store.file.path, 0o600)
        chmod(store.folder.path, 0o755)
        let folderError = #expect(throws: BuckiaError.self) { try store.load("a") }
        #expect(folderError?.message.contains("chmod 700") == true)
        chmod(store.folder.path, 0o700)
        #expect(try store.load("a")?.value == "x")
    }

    @Test("A store in a folder others may write is refused, unless the folder is sticky, as /tmp is")
    func writableParent() throws {
        let scratch = try ScratchFolder()
        let parent = scratch.url.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        let store = FileSecretStore(folder: parent.appendingPathComponent("secrets"))
        chmod(parent.path, 0o777)
        let error = #expect(throws: BuckiaError.self) { try store.save(StoredSecret(value: "x", savedAt: savedAt), for: "a") }
        #expect(error?.code == .permissionDenied)
        #expect(error?.message.contains("chmod go-w") == true)
        chmod(parent.path, 0o1777)
        try store.save(StoredSecret(value: "x", savedAt: savedAt), for: "a")
        #expect(try store.load("a")?.value == "x")
    }

    @Test("saveIfAbsent saves once however many threads race for one name", arguments: [StoreKind.memory, .file, .keychain])
    func saveIfAbsent(_ kind: StoreKind) async throws {
        let scratch = try ScratchFolder()
        let store = kind.make(scratch.url)
        let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask { try store.saveIfAbsent(StoredSecret(value: Secret("v\(index)"), savedAt: savedAt), for: "only") }
            }
            var wins = 0
            for try await won in group where won { wins += 1 }
            return wins
        }
        #expect(wins == 1)
    }

    @Test("A symbolic link in place of the file is not followed")
    func symlink() throws {
        let scratch = try ScratchFolder()
        let store = FileSecretStore(folder: scratch.url.appendingPathComponent("s"))
        try store.save(StoredSecret(value: "x", savedAt: savedAt), for: "a")
        let elsewhere = scratch.url.appendingPathComponent("elsewhere.json")
        try FileManager.default.moveItem(at: store.file, to: elsewhere)
        try FileManager.default.createSymbolicLink(at: store.file, withDestinationURL: elsewhere)
        #expect(throws: BuckiaError.self) { try store.load("a") }
    }

    @Test("An encrypted file holds no secret, context name or metadata in the clear", arguments: [StoreKind.fileWithKey, .fileWithPassphrase])
    func encryptedAtRest(_ kind: StoreKind) throws {
        let scratch = try ScratchFolder()
        let store = kind.make(scratch.url) as! FileSecretStore
        try store.save(StoredSecret(value: "TOPSECRETVALUE", savedAt: savedAt, metadata: ["endpoint": "https://id.example"]), for: "oauth/refresh")
        let text = try String(contentsOf: store.file, encoding: .utf8)
        for clear in ["TOPSECRETVALUE", "oauth/refresh", "id.example", Data("TOPSECRETVALUE".utf8).base64EncodedString()] {
            #expect(!text.contains(clear))
        }
        #expect(text.contains("AES-256-GCM"))
    }

    @Test("A wrong key or passphrase, no key, or a plain file under a key is refused and changes nothing")
    func wrongKeys() throws {
        let scratch = try ScratchFolder()
        let folder = scratch.url.appendingPathComponent("s")
        try FileSecretStore(folder: folder, encryption: .passphrase("right")).save(StoredSecret(value: "x", savedAt: savedAt), for: "a")
        let before = try Data(contentsOf: folder.appendingPathComponent("secrets.json"))
        let attempts: [FileSecretStore.Encryption] = [.passphrase("wrong"), .none, .key(StoreKind.key)]
        for encryption in attempts {
            let store = FileSecretStore(folder: folder, encryption: encryption)
            let error = #expect(throws: BuckiaError.self) { try store.load("a") }
            #expect(error?.code == .permissionDenied)
            #expect(throws: BuckiaError.self) { try store.save(StoredSecret(value: "y", savedAt: savedAt), for: "b") }
        }
        #expect(try Data(contentsOf: folder.appendingPathComponent("secrets.json")) == before)

        let plainFolder = scratch.url.appendingPathComponent("plain")
        try FileSecretStore(folder: plainFolder).save(StoredSecret(value: "x", savedAt: savedAt), for: "a")
        #expect((#expect(throws: BuckiaError.self) { try FileSecretStore(folder: plainFolder, encryption: .key(StoreKind.key)).load("a") })?.code == .permissionDenied)
        #expect(throws: BuckiaError.self) { try FileSecretStore(folder: scratch.url.appendingPathComponent("k"), encryption: .key("c2hvcnQ=")).save(StoredSecret(value: "x", savedAt: savedAt), for: "a") }
    }

    /// Edits the store file's JSON with `change`.
    func edit(_ store: FileSecretStore, _ change: (inout [String: Any]) -> Void) throws {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: store.file)) as? [String: Any])
        change(&object)
        try JSONSerialization.data(withJSONObject: object).write(to: store.file)
        chmod(store.file.path, 0o600)
    }

    @Test("A sealed file that was altered — a bit of the box, a lowered scrypt cost, another salt — does not open")
    func tamperedSeal() throws {
        let scratch = try ScratchFolder()
        let store = StoreKind.fileWithPassphrase.make(scratch.url) as! FileSecretStore
        try store.save(StoredSecret(value: "x", savedAt: savedAt), for: "a")
        let original = try Data(contentsOf: store.file)
        let changes: [(inout [String: Any]) -> Void] = [
            { object in
                var sealed = Data(base64Encoded: object["sealed"] as! String)!
                sealed[20] ^= 1
                object["sealed"] = sealed.base64EncodedString()
            },
            { object in
                var info = object["encryption"] as! [String: Any]
                info["n"] = 1 << 14
                object["encryption"] = info
            },
            { object in
                var info = object["encryption"] as! [String: Any]
                info["salt"] = Data(repeating: 1, count: 16).base64EncodedString()
                object["encryption"] = info
            },
        ]
        for change in changes {
            try original.write(to: store.file)
            try edit(store, change)
            let fresh = StoreKind.fileWithPassphrase.make(scratch.url)
            #expect((#expect(throws: BuckiaError.self) { try fresh.load("a") })?.code == .permissionDenied)
        }
        // The store that saved holds the derived key for the file's salt and reuses it: a lowered
        // cost cannot change that key, so only the seal's associated data can notice it.
        try original.write(to: store.file)
        try edit(store, changes[1])
        #expect((#expect(throws: BuckiaError.self) { try store.load("a") })?.code == .permissionDenied)
    }

    @Test(
        "A damaged store file is a typed error that says what to do, never a silent empty store",
        arguments: [
            "", "{", "[]", #"{"format":"other","version":1,"entries":{}}"#, #"{"format":"buckia-secrets","version":2,"entries":{}}"#,
            #"{"format":"buckia-secrets","version":1}"#, #"{"format":"buckia-secrets","version":1,"entries":{"a b":{"value":"x","savedAt":0}}}"#,
            #"{"format":"buckia-secrets","version":1,"entries":{"a":{"value":"x","savedAt":1e300}}}"#,
            #"{"format":"buckia-secrets","version":1,"entries":{"a":{"value":"x","savedAt":0}},"entries":{}}"#,
            #"{"format":"buckia-secrets","version":1,"encryption":{"cipher":"AES-256-GCM","kdf":"scrypt","salt":"AAAAAAAAAAAAAAAAAAAAAA==","n":4294967296,"r":8,"p":1},"sealed":"AAAA"}"#,
            #"{"format":"buckia-secrets","version":1,"encryption":{"cipher":"AES-256-GCM","kdf":"scrypt","salt":"AAAAAAAAAAAAAAAAAAAAAA==","n":1048576,"r":8,"p":1},"sealed":"AAAA"}"#,
            #"{"format":"buckia-secrets","version":1,"encryption":{"cipher":"AES-256-GCM","kdf":"scrypt","salt":"AAAAAAAAAAAAAAAAAAAAAA==","n":32768,"r":8,"p":16},"sealed":"AAAA"}"#,
        ])
    func damaged(_ text: String) throws {
        let scratch = try ScratchFolder()
        let passphrase = text.contains("scrypt")
        let store = FileSecretStore(folder: scratch.url.appendingPathComponent("s"), encryption: passphrase ? .passphrase("p") : .none)
        try store.save(StoredSecret(value: "x", savedAt: savedAt), for: "seed")
        try Data(text.utf8).write(to: store.file)
        chmod(store.file.path, 0o600)
        let error = #expect(throws: BuckiaError.self) { try store.load("a") }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("Move it aside") == true)
        #expect(throws: BuckiaError.self) { try store.save(StoredSecret(value: "y", savedAt: savedAt), for: "b") }
        #expect(try String(contentsOf: store.file, encoding: .utf8) == text)
    }

    @Test("Eight threads saving 25 secrets each into one file lose none of them")
    func concurrentWriters() async throws {
        let scratch = try ScratchFolder()
        let folder = scratch.url.appendingPathComponent("s")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    let store = FileSecretStore(folder: folder)  // its own instance, as another process would have
                    for index in 0..<25 { try store.save(StoredSecret(value: Secret("v\(writer)-\(index)"), savedAt: savedAt), for: "w\(writer)-\(index)") }
                }
            }
            try await group.waitForAll()
        }
        let entries = try FileSecretStore(folder: folder).entries()
        #expect(entries.count == 200)
    }

    @Test("A stored secret prints no value")
    func redaction() {
        let stored = StoredSecret(value: "TOPSECRETVALUE", expiresAt: savedAt, savedAt: savedAt)
        var dumped = ""
        dump(stored, to: &dumped)
        for text in ["\(stored)", String(reflecting: stored), dumped] { #expect(!text.contains("TOPSECRETVALUE")) }
    }

    @Test("The standard store lives under XDG_CONFIG_HOME, else ~/.config, and takes its encryption from the environment")
    func standardFolder() {
        #expect(FileSecretStore.defaultFolder(environment: ["XDG_CONFIG_HOME": "/x/cfg", "HOME": "/h"]).path == "/x/cfg/buckia/secrets")
        #expect(FileSecretStore.defaultFolder(environment: ["HOME": "/h"]).path == "/h/.config/buckia/secrets")
        if case .passphrase = FileSecretStore.Encryption.fromEnvironment(["BUCKIA_SECRETS_PASSPHRASE": "p"]) {} else { Issue.record("passphrase not taken") }
        if case .key = FileSecretStore.Encryption.fromEnvironment(["BUCKIA_SECRETS_KEY": "k", "BUCKIA_SECRETS_PASSPHRASE": "p"]) {} else { Issue.record("key not preferred") }
        if case .none = FileSecretStore.Encryption.fromEnvironment([:]) {} else { Issue.record("encryption from nothing") }
    }

    @Test(
        "A key or passphrase that is set but empty is refused, never taken as no encryption",
        arguments: [["BUCKIA_SECRETS_PASSPHRASE": ""], ["BUCKIA_SECRETS_KEY": ""], ["BUCKIA_SECRETS_KEY": "", "BUCKIA_SECRETS_PASSPHRASE": "p"]])
    func emptyKeyRefused(_ environment: [String: String]) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-secrets-empty-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileSecretStore(folder: folder, encryption: .fromEnvironment(environment))
        let refused = try #require(throws: BuckiaError.self) { try store.save(StoredSecret(value: "plain-text-would-leak", savedAt: Date()), for: "ctx") }
        #expect(refused.code == .invalidConfiguration)
        #expect(refused.message.contains("set but empty"))
        #expect(throws: BuckiaError.self) { try store.entries() }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("secrets.json").path))
    }
}

@Suite("TokenManager")
struct TokenManagerTests {
    @Test("Tokens by context, with expiry: an expired token is not handed out")
    func tokens() throws {
        let clock = TestClock()
        let manager = TokenManager(store: InMemorySecretStore(), clock: clock.source)
        try manager.saveToken("tok", for: "user-u1", expiresAt: clock.now.addingTimeInterval(60), metadata: ["scope": "sync"])
        #expect(try manager.getToken(for: "user-u1") == "tok")
        clock.advance(60)
        #expect(try manager.getToken(for: "user-u1") == nil)
        #expect(try manager.storedToken(for: "user-u1")?.metadata == ["scope": "sync"])
        try manager.deleteToken(for: "user-u1")
        try manager.deleteToken(for: "user-u1")
        #expect(try manager.storedToken(for: "user-u1") == nil)
    }

    @Test("The seed's sync token: issued from a saved key, verified by the manager's verifier")
    func userStorageToken() throws {
        let scratch = try ScratchFolder()
        let clock = TestClock()
        let folder = scratch.url.appendingPathComponent("secrets")
        let manager = TokenManager(store: FileSecretStore(folder: folder), clock: clock.source)
        #expect(throws: BuckiaError.self) { try manager.generateUserStorageToken(userId: "u1", grants: [], expiry: .seconds(60)) }
        try manager.createSigningKey(keyId: "2026-11")
        #expect((#expect(throws: BuckiaError.self) { try manager.createSigningKey(keyId: "2026-11") })?.code == .alreadyExists)
        let sync: StorageGrants = [StoragePermissions.readOnly.restrictToPath("u1/"), StoragePermissions.write.restrictToPath("u1/inbound/")]
        let token = try manager.generateUserStorageToken(userId: "u1", grants: sync, expiry: .seconds(86_400))
        let reopened = TokenManager(store: FileSecretStore(folder: folder), clock: clock.source)
        let claims = try reopened.verifier().verify(token.token.exposedValue)
        #expect(claims.grants == sync)
        try manager.createSigningKey(.hs256, keyId: "2026-12")
        #expect(throws: BuckiaError.self) { try manager.generateUserStorageToken(userId: "u1", grants: sync, expiry: .seconds(60)) }
        let second = try manager.generateUserStorageToken(userId: "u1", grants: sync, expiry: .seconds(60), keyId: "2026-12")
        #expect(try reopened.verifier().verify(second.token.exposedValue).subject == "u1")
        #expect(throws: BuckiaError.self) { try manager.generateUserStorageToken(userId: "u1", grants: [StoragePermissions.all.restrictToPath("../")], expiry: .seconds(60), keyId: "2026-12") }
        // What is saved under the signing-key prefix verifies tokens: only createSigningKey writes it.
        #expect(throws: BuckiaError.self) { try manager.saveToken("planted", for: "buckia.signing-key/evil", metadata: ["algorithm": "HS256"]) }
        #expect(throws: BuckiaError.self) { try manager.deleteToken(for: "buckia.signing-key/2026-11") }
        #expect(try manager.deleteSigningKey(keyId: "2026-11"))
        #expect(throws: UserTokenRefusal.self) { try reopened.verifier().verify(token.token.exposedValue) }
    }
}

/// Async code's view of a store: off the cooperative pool where the store blocks.
@Suite("AsyncSecretStore")
struct AsyncSecretStoreTests {
    @Test("A file store's calls run on the pool's threads; an in-memory store's start none", .enabled(if: SystemCalls.threadID() >= 0))
    func blockingStoresUseThePool() async throws {
        let folder = try ScratchFolder()
        let pool = BlockingPool(threads: 1, name: "buckia-t-sec")
        let file = AsyncSecretStore(FileSecretStore(folder: folder.url.appendingPathComponent("s")), pool: pool)
        let secret = StoredSecret(value: Secret("v"), savedAt: Date(timeIntervalSince1970: 1))
        try await file.save(secret, for: "a")
        #expect(try await file.saveIfAbsent(secret, for: "a") == false)
        #expect(try await file.load("a") == secret)
        #expect(try await file.entries().map(\.context) == ["a"])
        #expect(try await file.delete("a"))
        #expect(pool.threadIDs.count == 1, "the file store's calls started the pool")
        await pool.shutdown()

        let idle = BlockingPool(threads: 1, name: "buckia-t-sec2")
        let memory = AsyncSecretStore(InMemorySecretStore(), pool: idle)
        try await memory.save(secret, for: "a")
        #expect(try await memory.load("a") == secret)
        #expect(idle.threadIDs.isEmpty, "an in-memory store is called directly")
        await idle.shutdown()
    }
}
