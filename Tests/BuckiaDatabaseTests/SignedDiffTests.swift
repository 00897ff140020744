import BuckiaCore
@testable import BuckiaDatabase
import BuckiaLocal
import BuckiaSecurity
import BuckiaSQLite
import BuckiaTestSupport
import BuckiaUserFolder
import Foundation
import Testing

/// Signed diffs: u1 signs what it sends with its Ed25519 key, u2 applies only diffs whose
/// signature verifies under a key their sender published, from senders it accepts. Each forgery
/// below is refused before the database is touched (its bytes are compared), with the kind of
/// refusal `buckia db` reports.
@Suite("Signed diffs: the sender is who signed, or the diff is refused")
struct SignedDiffTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    /// The keys of the story: u1's current and previous keys, and u3's.
    struct Keys: Sendable {
        let u1: UserTokenSigningKey
        let u1Old: UserTokenSigningKey
        let u3: UserTokenSigningKey
        /// A key of u3's own that names itself as u1's current key.
        let u3AsU1: UserTokenSigningKey

        init() throws {
            u1 = try UserTokenSigningKey.generate(keyId: "u1-2026")
            u1Old = try UserTokenSigningKey.generate(keyId: "u1-2025")
            u3 = try UserTokenSigningKey.generate(keyId: "u3-2026")
            u3AsU1 = try UserTokenSigningKey.generate(keyId: "u1-2026")
        }

        /// What u2 knows: the keys u1 and u3 published.
        func published(u1Keys: [UserTokenSigningKey]? = nil) throws -> SenderKeys {
            var keys = SenderKeys()
            for key in u1Keys ?? [u1, u1Old] { try keys.add(try key.verificationKey(), for: "u1") }
            try keys.add(try u3.verificationKey(), for: "u3")
            return keys
        }
    }

    static func changes(_ title: String) -> DatabaseChanges {
        var changes = DatabaseChanges()
        changes.upsert(["id": 1, "title": .text(title), "owner": "u1", "duration": 61.5, "thumbnail": nil], into: "recordings")
        return changes
    }

    /// A diff `sender` makes of `changes`, signed with `key`.
    static func diff(in folder: URL, sender: String, key: UserTokenSigningKey?, title: String = "Morning take") async throws -> URL {
        let database = folder.appendingPathComponent("\(sender)-\(UUID().uuidString).sqlite")
        try DB.make(database)
        let manager = DatabaseManager(
            folderStructure: FolderStructureConfiguration(rootPath: folder.appendingPathComponent("users").path, userId: sender), database: database,
            bases: UserFolder.Bases(applicationSupport: folder, documents: folder),
            options: .init(outbox: folder.appendingPathComponent("out-\(UUID().uuidString)"), signingKey: key), clock: { now })
        return try await manager.createDatabaseDiff(for: changes(title))
    }

    /// Runs `sql` on the diff file at `url` (a forger editing it with any SQLite).
    static func edit(_ url: URL, _ sql: String) throws {
        let connection = try SQLiteConnection(path: url.path)
        try connection.execute(sql)
    }

    /// The signature row of the diff at `url`, as SQL values.
    static func signatureRow(_ url: URL) throws -> (String, String) {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        let rows = try connection.query("SELECT key_id, signature FROM buckia_signature") { ($0.string(0) ?? "", $0.string(1) ?? "") }
        return try #require(rows.first)
    }

    /// One forgery: how it is made, and the refusal it must get.
    struct Forgery: Sendable, CustomTestStringConvertible {
        var name: String
        var kind: String
        var accepting: Set<String>? = nil
        var make: @Sendable (URL, Keys) async throws -> URL

        var testDescription: String { "\(name) → \(kind)" }
    }

    static let forgeries: [Forgery] = [
        Forgery(name: "an unsigned diff", kind: "unsigned") { folder, _ in try await diff(in: folder, sender: "u1", key: nil) },
        Forgery(name: "u3 names u1 as sender and signs with its own key", kind: "unknownSigningKey") { folder, keys in
            try await diff(in: folder, sender: "u1", key: keys.u3)
        },
        Forgery(name: "u3 names u1 and signs with a key of its own that claims u1's key id", kind: "badSignature") { folder, keys in
            try await diff(in: folder, sender: "u1", key: keys.u3AsU1)
        },
        Forgery(name: "u1's valid signature moved onto a diff u3 made as u1", kind: "badSignature") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            let forged = try await diff(in: folder, sender: "u1", key: nil, title: "forged")
            let (keyId, signature) = try signatureRow(genuine)
            try edit(forged, "CREATE TABLE buckia_signature (key_id TEXT NOT NULL, signature TEXT NOT NULL); INSERT INTO buckia_signature VALUES ('\(keyId)', '\(signature)')")
            return forged
        },
        Forgery(name: "u1's signed diff with a row changed after signing", kind: "payloadHashMismatch") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            try edit(genuine, "UPDATE buckia_upsert_1 SET c1 = 'changed on the way'")
            return genuine
        },
        Forgery(name: "u1's signed diff with its manifest's hash changed to match a changed row", kind: "badSignature") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            let other = try await diff(in: folder, sender: "u1", key: nil, title: "changed on the way")
            let otherHash = try DiffSummary(contentsOf: other, now: now).manifest.payloadSHA256
            let ksuid = try DiffSummary(contentsOf: genuine, now: now).manifest.id
            // Same id, same sender, another row: a hash that matches it, and u1's signature.
            try edit(other, "UPDATE buckia_manifest SET ksuid = '\(ksuid)'")
            try edit(genuine, "UPDATE buckia_upsert_1 SET c1 = 'changed on the way'; UPDATE buckia_manifest SET payload_sha256 = '\(otherHash)'")
            return genuine
        },
        Forgery(name: "u1's signed diff with the sender changed to u3", kind: "unknownSigningKey") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            try edit(genuine, "UPDATE buckia_manifest SET sender = 'u3'")
            return genuine
        },
        Forgery(name: "a sender the recipient does not accept, correctly signed", kind: "senderNotAccepted", accepting: ["u1"]) { folder, keys in
            try await diff(in: folder, sender: "u3", key: keys.u3)
        },
        Forgery(name: "a signature one byte short", kind: "malformedSignature") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            let (_, signature) = try signatureRow(genuine)
            let short = Base64URL.encode(Data(try #require(Base64URL.decode(signature)).dropLast()))
            try edit(genuine, "UPDATE buckia_signature SET signature = '\(short)'")
            return genuine
        },
        Forgery(name: "a signature that is not base64url", kind: "malformedSignature") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            try edit(genuine, "UPDATE buckia_signature SET signature = signature || '=='")
            return genuine
        },
        Forgery(name: "a signature as a blob", kind: "malformedSignature") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            try edit(genuine, "UPDATE buckia_signature SET signature = CAST(signature AS BLOB)")
            return genuine
        },
        Forgery(name: "two signatures, one of them u1's", kind: "malformedSignature") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            try edit(genuine, "INSERT INTO buckia_signature SELECT 'u3-2026', signature FROM buckia_signature")
            return genuine
        },
        Forgery(name: "a key id with a path in it", kind: "malformedSignature") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            try edit(genuine, "UPDATE buckia_signature SET key_id = '../u1-2026'")
            return genuine
        },
        Forgery(name: "the signature table as a view", kind: "unexpectedObject") { folder, keys in
            let genuine = try await diff(in: folder, sender: "u1", key: keys.u1)
            try edit(genuine, "ALTER TABLE buckia_signature RENAME TO s; CREATE VIEW buckia_signature AS SELECT * FROM s")
            return genuine
        },
        Forgery(name: "u1's signature by a key u1 no longer publishes", kind: "unknownSigningKey") { folder, keys in
            try await diff(in: folder, sender: "u1", key: try UserTokenSigningKey.generate(keyId: "u1-2019"))
        },
    ]

    @Test("The table has at least 15 forgeries")
    func tableSize() { #expect(Self.forgeries.count >= 15) }

    @Test("Each forgery is refused with its kind, and the database is unchanged", arguments: forgeries)
    func forgery(_ forgery: Forgery) async throws {
        let folder = try DB.scratch("signed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let keys = try Keys()
        let file = try await forgery.make(folder, keys)
        let database = folder.appendingPathComponent("u2.sqlite")
        let connection = try DB.make(database, "INSERT INTO recordings (id, title) VALUES (1, 'u2''s own')")
        let before = try DB.bytes(database)
        let options = ApplyOptions(senders: .signed(by: try keys.published(), accepting: forgery.accepting))
        do {
            let change = try DiffApplier.apply(file, to: connection, options: options, now: Self.now)
            Issue.record("applied: \(change)")
        } catch let error as BuckiaError {
            let problem = try #require(error.cause as? DiffProblem, "\(error)")
            #expect(problem.kind == forgery.kind, "\(error.message)")
            #expect(error.message.contains("The database was not changed"), "\(error.message)")
        }
        #expect(try DB.bytes(database) == before)
    }

    @Test("u1's diffs signed with its current and its previous key both apply, once; after the old key is dropped, a diff signed with it waits")
    func rotation() async throws {
        let folder = try DB.scratch("signed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let keys = try Keys()
        let old = try await Self.diff(in: folder, sender: "u1", key: keys.u1Old, title: "before the rotation")
        let new = try await Self.diff(in: folder, sender: "u1", key: keys.u1, title: "after the rotation")
        let database = folder.appendingPathComponent("u2.sqlite")
        let connection = try DB.make(database)
        let both = ApplyOptions(senders: .signed(by: try keys.published(), accepting: ["u1"]))
        let first = try DiffApplier.apply(old, to: connection, options: both, now: Self.now)
        let second = try DiffApplier.apply(new, to: connection, options: both, now: Self.now)
        #expect(first.sender == "u1" && second.sender == "u1" && !first.wasAlreadyApplied && !second.wasAlreadyApplied)
        #expect(try DB.dumpTable(database, "recordings") == [#"recordings: integer(1)|text("after the rotation")|text("u1")|real(61.5)|null"#])
        // A replay of an applied diff changes nothing.
        let before = try DB.bytes(database)
        #expect(try DiffApplier.apply(new, to: connection, options: both, now: Self.now).wasAlreadyApplied)
        #expect(try DB.bytes(database) == before)
        // With only the current key published, a diff signed with the old one is refused for
        // now, as one that may apply once the key is found again.
        let another = try await Self.diff(in: folder, sender: "u1", key: keys.u1Old, title: "late")
        let current = ApplyOptions(senders: .signed(by: try keys.published(u1Keys: [keys.u1]), accepting: ["u1"]))
        let error = try #require(throws: BuckiaError.self) { try DiffApplier.apply(another, to: connection, options: current, now: Self.now) }
        let problem = try #require(error.cause as? DiffProblem)
        #expect(problem.kind == "unknownSigningKey" && problem.dependsOnLocalState)
    }

    @Test("A published key set is JSON Web Keys of Ed25519 public keys with distinct ids; anything else adds nothing", arguments: [
        #"{"keys": [{"kty":"OKP","crv":"Ed25519","kid":"a","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}, {"kty":"OKP","crv":"Ed25519","kid":"a","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#,
        #"{"keys": [{"kty":"OKP","crv":"Ed25519","kid":"a","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]}"#,
        #"{"keys": [{"kty":"RSA","kid":"a","n":"AQAB","e":"AQAB"}]}"#,
        #"{"keys": {"kid": "a"}}"#,
        #"[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]"#,
        #"{"keys": [], "keys": []}"#,
        "not json",
    ])
    func badKeySet(_ text: String) throws {
        var keys = SenderKeys()
        #expect(throws: BuckiaError.self) { try keys.add(jwkSet: Data(text.utf8), for: "u1") }
        #expect(keys.keys.isEmpty)
    }

    @Test("A published key set round-trips, and an HS256 key signs no diff")
    func keySet() async throws {
        let keys = try Keys()
        var published = SenderKeys()
        try published.add(jwkSet: try SenderKeys.jwkSet([try keys.u1.verificationKey(), try keys.u1Old.verificationKey()]), for: "u1")
        #expect(published.keys["u1"]?.keys.sorted() == ["u1-2025", "u1-2026"])
        let folder = try DB.scratch("signed")
        defer { try? FileManager.default.removeItem(at: folder) }
        await #expect(throws: BuckiaError.self) { try await Self.diff(in: folder, sender: "u1", key: try UserTokenSigningKey.generate(.hs256, keyId: "shared")) }
    }

    @Test("Keys published at keys/<user>.jwk are fetched for the senders asked; a sender with none gets none; a damaged set is an error")
    func publishAndFetch() async throws {
        let folder = try DB.scratch("signed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let keys = try Keys()
        let bucket = try LocalProvider(root: folder.appendingPathComponent("bucket"))
        let published = try await SenderKeys.publish([try keys.u1.verificationKey(), try keys.u1Old.verificationKey()], for: "u1", to: bucket)
        #expect(published.rawValue == "keys/u1.jwk")
        let fetched = try await SenderKeys.fetch(["u1", "u9"], from: bucket)
        #expect(fetched.keys["u1"]?.keys.sorted() == ["u1-2025", "u1-2026"])
        #expect(fetched.keys["u9"] == nil)
        // A diff u1 signed applies with the keys fetched.
        let diff = try await Self.diff(in: folder, sender: "u1", key: keys.u1)
        let connection = try DB.make(folder.appendingPathComponent("u2.sqlite"))
        #expect(try DiffApplier.apply(diff, to: connection, options: ApplyOptions(senders: .signed(by: fetched, accepting: nil)), now: Self.now).sender == "u1")
        _ = try await bucket.uploadData(Data("{\"keys\": 7}".utf8), remotePath: try ObjectKey("keys/u3.jwk"), options: UploadOptions())
        await #expect(throws: BuckiaError.self) { try await SenderKeys.fetch(["u3"], from: bucket) }
        #expect(throws: BuckiaError.self) { try SenderKeys.location(of: "../u1") }
    }

    @Test("A diff PyNaCl signed (Docs/Examples/diff/make_diff.py --sign) applies; one Buckia signed verifies in PyNaCl")
    func python() async throws {
        let folder = try DB.scratch("signed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let run = try ToolRun.run(
            path: try PythonProcess.executable(), [DB.makeDiffScript.path, folder.path, "server", "--sign", "server-1"],
            exactEnvironment: ProcessInfo.processInfo.environment)
        try #require(run.status == 0, "\(run.errors)")
        let lines = run.output.split(separator: "\n").map(String.init)
        try #require(lines.count == 2, "\(run.output)")
        var published = SenderKeys()
        try published.add(jwkSet: Data(#"{"keys": [\#(lines[1])]}"#.utf8), for: "server")
        let database = folder.appendingPathComponent("app.sqlite")
        let connection = try DB.make(database)
        let change = try DiffApplier.apply(
            URL(fileURLWithPath: lines[0]), to: connection, options: ApplyOptions(senders: .signed(by: published, accepting: ["server"])), now: Date())
        #expect(change.sender == "server" && change.upserted == 2)

        // The other way: PyNaCl checks Buckia's signature with the published key alone.
        let keys = try Keys()
        let signed = try await Self.diff(in: folder, sender: "u1", key: keys.u1)
        let jwk = try #require(try keys.u1.verificationKey().jwk)
        let script = folder.appendingPathComponent("verify.py")
        try Data(
            #"""
            import base64, json, sqlite3, sys
            import nacl.signing, nacl.exceptions
            def b64(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
            jwk = json.loads(sys.argv[2])
            db = sqlite3.connect(sys.argv[1])
            (payload,) = db.execute("SELECT payload_sha256 FROM buckia_manifest").fetchone()
            (kid, signature) = db.execute("SELECT key_id, signature FROM buckia_signature").fetchone()
            assert kid == jwk["kid"]
            message = f"buckia-diff-signature/v1\n{kid}\n{payload}".encode()
            key = nacl.signing.VerifyKey(b64(jwk["x"]))
            key.verify(message, b64(signature))
            try:
                key.verify(message + b"x", b64(signature))
                print("tampered accepted")
            except nacl.exceptions.BadSignatureError:
                print("verified")
            """#.utf8
        ).write(to: script)
        let check = try ToolRun.run(path: try PythonProcess.executable(), [script.path, signed.path, jwk], exactEnvironment: ProcessInfo.processInfo.environment)
        #expect(check.status == 0, "\(check.errors)")
        #expect(check.output.trimmingCharacters(in: .whitespacesAndNewlines) == "verified")
    }
}
