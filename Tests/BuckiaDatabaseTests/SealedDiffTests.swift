import BuckiaCore
@testable import BuckiaDatabase
import BuckiaLocal
import BuckiaSecurity
import BuckiaSQLite
import BuckiaTestSupport
import BuckiaUserFolder
import Foundation
import Testing

/// Sealed diffs: u1 seals a diff to u2's X25519 key; the bucket holds bytes only u2 can open,
/// and u2's apply opens it, checks u1's signature inside, and applies it. Every change to the
/// sealed file, its name or its header, and another recipient's key, is refused with the
/// database's bytes unchanged.
@Suite("Sealed diffs: only the recipient opens them")
struct SealedDiffTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let secretTitle = "the take only u2 may read"

    /// A signed diff of u1's, sealed to `recipient`.
    static func sealed(in folder: URL, to recipient: DiffRecipientKey, signedWith key: UserTokenSigningKey) async throws -> URL {
        let diff = try await SignedDiffTests.diff(in: folder, sender: "u1", key: key, title: secretTitle)
        return try SealedDiff.seal(diff, to: recipient, in: folder.appendingPathComponent("sealed-\(UUID().uuidString)"), now: now)
    }

    static func options(_ keys: [DiffRecipientPrivateKey], signer: UserTokenSigningKey) throws -> ApplyOptions {
        var senders = SenderKeys()
        try senders.add(try signer.verificationKey(), for: "u1")
        return ApplyOptions(senders: .signed(by: senders, accepting: ["u1"]), recipientKeys: keys)
    }

    @Test("A sealed diff holds none of its rows in the clear, opens with the recipient's key, and applies once with its signature checked")
    func roundTrip() async throws {
        let folder = try DB.scratch("sealed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let u1 = try UserTokenSigningKey.generate(keyId: "u1-sign")
        let u2 = try DiffRecipientPrivateKey.generate(keyId: "u2-seal")
        let file = try await Self.sealed(in: folder, to: try u2.publicKey(), signedWith: u1)
        #expect(file.pathExtension == "sealed")
        let bytes = try Data(contentsOf: file)
        #expect(bytes.range(of: Data(Self.secretTitle.utf8)) == nil && bytes.range(of: Data("SQLite format 3".utf8)) == nil)
        let database = folder.appendingPathComponent("u2.sqlite")
        let connection = try DB.make(database)
        let change = try DiffApplier.apply(file, to: connection, options: try Self.options([u2], signer: u1), now: Self.now)
        #expect(change.sender == "u1" && change.upserted == 1)
        #expect(try DB.dumpTable(database, "recordings").first?.contains(Self.secretTitle) == true)
        #expect(try DiffApplier.apply(file, to: connection, options: try Self.options([u2], signer: u1), now: Self.now).wasAlreadyApplied)
    }

    /// One way to spoil a sealed file, and the refusal it must get.
    struct Spoil: Sendable, CustomTestStringConvertible {
        var name: String
        var kind: String
        var spoil: @Sendable (URL) throws -> URL

        var testDescription: String { "\(name) → \(kind)" }
    }

    static func rewrite(_ url: URL, _ change: (inout [UInt8]) -> Void) throws -> URL {
        var bytes = Array(try Data(contentsOf: url))
        change(&bytes)
        try Data(bytes).write(to: url)
        return url
    }

    static let spoils: [Spoil] = [
        Spoil(name: "a byte of the ciphertext changed", kind: "sealNotOpened") { url in try rewrite(url) { $0[$0.count - 40] ^= 1 } },
        Spoil(name: "the tag changed", kind: "sealNotOpened") { url in try rewrite(url) { $0[$0.count - 1] ^= 1 } },
        Spoil(name: "the encapsulated key changed", kind: "sealNotOpened") { url in try rewrite(url) { $0[21 + 7 + 3] ^= 1 } },
        Spoil(name: "cut short", kind: "sealNotOpened") { url in try rewrite(url) { $0.removeLast(100) } },
        Spoil(name: "only the header", kind: "malformedSeal") { url in try rewrite(url) { $0 = Array($0.prefix(40)) } },
        Spoil(name: "another format's magic", kind: "malformedSeal") { url in try rewrite(url) { $0[0] = UInt8(ascii: "X") } },
        Spoil(name: "version 2", kind: "malformedSeal") { url in try rewrite(url) { $0[19] = 2 } },
        Spoil(name: "named for another KSUID", kind: "sealNotOpened") { url in
            let other = url.deletingLastPathComponent().appendingPathComponent("\(try KSUID(date: now)).sealed")
            try FileManager.default.moveItem(at: url, to: other)
            return other
        },
        Spoil(name: "sealed to a key id this database does not hold", kind: "noRecipientKey") { url in
            try rewrite(url) { $0[21] = UInt8(ascii: "x") }
        },
        Spoil(name: "a plain SQLite file named .sealed", kind: "malformedSeal") { url in
            try Data("SQLite format 3\u{0}".utf8 + [UInt8](repeating: 0, count: 100)).write(to: url)
            return url
        },
    ]

    @Test("Each spoiled sealed file is refused with its kind, and the database is unchanged", arguments: spoils)
    func spoiled(_ spoil: Spoil) async throws {
        let folder = try DB.scratch("sealed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let u1 = try UserTokenSigningKey.generate(keyId: "u1-sign")
        let u2 = try DiffRecipientPrivateKey.generate(keyId: "u2-seal")
        let file = try spoil.spoil(try await Self.sealed(in: folder, to: try u2.publicKey(), signedWith: u1))
        let database = folder.appendingPathComponent("u2.sqlite")
        let connection = try DB.make(database)
        let before = try DB.bytes(database)
        let error = try #require(throws: BuckiaError.self) { try DiffApplier.apply(file, to: connection, options: try Self.options([u2], signer: u1), now: Self.now) }
        #expect((error.cause as? DiffProblem)?.kind == spoil.kind, "\(error.message)")
        #expect(try DB.bytes(database) == before)
    }

    @Test("u3, holding a key of its own under u2's key id, cannot open what was sealed to u2")
    func anotherRecipient() async throws {
        let folder = try DB.scratch("sealed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let u1 = try UserTokenSigningKey.generate(keyId: "u1-sign")
        let u2 = try DiffRecipientPrivateKey.generate(keyId: "u2-seal")
        let u3 = try DiffRecipientPrivateKey.generate(keyId: "u2-seal")
        let file = try await Self.sealed(in: folder, to: try u2.publicKey(), signedWith: u1)
        let connection = try DB.make(folder.appendingPathComponent("u3.sqlite"))
        let error = try #require(throws: BuckiaError.self) { try DiffApplier.apply(file, to: connection, options: try Self.options([u3], signer: u1), now: Self.now) }
        #expect((error.cause as? DiffProblem)?.kind == "sealNotOpened")
    }

    @Test("One published set at keys/<user>.jwk carries a user's signing and sealing keys; the sender finds the sealing key there")
    func publishedSealingKey() async throws {
        let folder = try DB.scratch("sealed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let u1 = try UserTokenSigningKey.generate(keyId: "u1-sign")
        let u2Sign = try UserTokenSigningKey.generate(keyId: "u2-sign")
        let u2 = try DiffRecipientPrivateKey.generate(keyId: "u2-seal")
        let bucket = try LocalProvider(root: folder.appendingPathComponent("bucket"))
        try await SenderKeys.publish([try u2Sign.verificationKey()], recipientKeys: [try u2.publicKey()], for: "u2", to: bucket)
        let fetched = try await SenderKeys.fetch(["u2"], from: bucket)
        #expect(fetched.keys["u2"]?.keys.sorted() == ["u2-sign"])
        let sealing = try #require(fetched.recipientKeys["u2"]?["u2-seal"])
        #expect(sealing == (try u2.publicKey()))
        let file = try await Self.sealed(in: folder, to: sealing, signedWith: u1)
        let connection = try DB.make(folder.appendingPathComponent("u2.sqlite"))
        #expect(try DiffApplier.apply(file, to: connection, options: try Self.options([u2], signer: u1), now: Self.now).sender == "u1")
        // A set whose sealing key carries its private half, or shares a signing key's id, adds nothing.
        for bad in [
            #"{"keys": [{"kty":"OKP","crv":"X25519","kid":"k","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]}"#,
            #"{"keys": [{"kty":"OKP","crv":"X25519","kid":"k","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}, {"kty":"OKP","crv":"Ed25519","kid":"k","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#,
        ] {
            var keys = SenderKeys()
            #expect(throws: BuckiaError.self) { try keys.add(jwkSet: Data(bad.utf8), for: "u2") }
            #expect(keys.keys.isEmpty && keys.recipientKeys.isEmpty)
        }
    }

    @Test("DatabaseManager.send seals per send: the bucket gets <KSUID>.sealed, and the recipient's processInboundChanges applies it")
    func sendSealed() async throws {
        let folder = try DB.scratch("sealed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let u1 = try UserTokenSigningKey.generate(keyId: "u1-sign")
        let u2 = try DiffRecipientPrivateKey.generate(keyId: "u2-seal")
        let diff = try await SignedDiffTests.diff(in: folder, sender: "u1", key: u1, title: Self.secretTitle)
        let bucket = try LocalProvider(root: folder.appendingPathComponent("bucket"))
        let key = try await DatabaseManager.send(diff, toUserFolder: "u2", through: bucket, sealedFor: try u2.publicKey())
        #expect(key.rawValue.hasPrefix("u2/inbound/") && key.rawValue.hasSuffix(".sealed"))
        let stored = try await bucket.readData(remotePath: key.rawValue)
        #expect(stored.range(of: Data(Self.secretTitle.utf8)) == nil)
        // u2's device: the file in its inbound folder, applied by its manager.
        let database = folder.appendingPathComponent("u2-app.sqlite")
        try DB.make(database)
        let manager = DatabaseManager(
            folderStructure: FolderStructureConfiguration(rootPath: folder.appendingPathComponent("users").path, userId: "u2"), database: database,
            bases: UserFolder.Bases(applicationSupport: folder, documents: folder), options: .init(apply: try Self.options([u2], signer: u1)), clock: { Self.now })
        let inbound = try manager.userFolder().inbound
        try stored.write(to: inbound.appendingPathComponent(URL(fileURLWithPath: key.rawValue).lastPathComponent))
        let applied = try await manager.processInboundChanges()
        #expect(applied.map(\.sender) == ["u1"])
        #expect(try DB.dumpTable(database, "recordings").first?.contains(Self.secretTitle) == true)
    }
}
