import BuckiaSQLite
import BuckiaTestSupport
import Foundation
import Testing

/// `buckia user`: three users, each with a secret store of their own, share one bucket (a local
/// remote). u1 shares a change with u2, sealed; u2's sync applies it once and knows it is u1's;
/// what u3 forges in u1's name, or sends unsigned, is refused (exit 9) and changes nothing.
@Suite("buckia user: init, share, sync and status between three users")
struct UserCommandTests {
    static let schema = "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"

    @Test("u1 shares a sealed change with u2, applied once; u3's forgery and an unsigned diff are refused")
    func story() throws {
        let bucket = try TestFolder.make("buckia-user-bucket")
        defer { TestFolder.remove(bucket) }
        let remote = ["BUCKIA_REMOTE_DATA_PROVIDER": "local", "BUCKIA_REMOTE_DATA_ROOT": bucket.path]
        let u1 = try CLIHarness(), u2 = try CLIHarness(), u3 = try CLIHarness()
        func initialize(_ harness: borrowing CLIHarness, _ id: String) throws {
            let made = try harness.run("user", "init", harness.home.appendingPathComponent("folders").path, "--user", id, "--publish", "data:home", extraEnvironment: remote)
            try #require(made.status == 0, "\(id): \(made.stderr)")
            #expect(made.stdout.contains("published data:home/keys/\(id).jwk"))
        }
        try initialize(u1, "u1")
        try initialize(u2, "u2")
        try initialize(u3, "u3")
        #expect(FileManager.default.fileExists(atPath: u2.home.appendingPathComponent("folders/u2/inbound").path))

        // u1's change: a row added.
        let old = u1.home.appendingPathComponent("old.db"), new = u1.home.appendingPathComponent("new.db")
        try SQLiteConnection(path: old.path).execute(Self.schema + "INSERT INTO items VALUES (1, 'one');")
        try SQLiteConnection(path: new.path).execute(Self.schema + "INSERT INTO items VALUES (1, 'one'), (2, 'from u1');")
        let outbox = u1.home.appendingPathComponent("outbox").path
        let diff = try u1.run("db", "diff", old.path, new.path, "--sender", "u1", "--sign-key", "u1.sign", "-o", outbox)
        try #require(diff.status == 0, "\(diff.stderr)")
        let diffFile = diff.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let shared = try u1.run("user", "share", diffFile, "data:home", "--to", "u2", "--seal", extraEnvironment: remote)
        try #require(shared.status == 0, "\(shared.stderr)")
        #expect(shared.stdout.contains("sealed"))
        // The bucket holds it sealed: nothing of the row is readable there.
        let inbound = bucket.appendingPathComponent("home/u2/inbound")
        let stored = try FileManager.default.contentsOfDirectory(atPath: inbound.path)
        #expect(stored.count == 1 && stored[0].hasSuffix(".sealed"))
        let sealedBytes = try Data(contentsOf: inbound.appendingPathComponent(stored[0]))
        #expect(sealedBytes.range(of: Data("from u1".utf8)) == nil, "the sealed diff shows the row in the clear")

        // u2's app database starts as u1's old one.
        let app = u2.home.appendingPathComponent("app.db")
        try SQLiteConnection(path: app.path).execute(Self.schema + "INSERT INTO items VALUES (1, 'one');")
        let folders = u2.home.appendingPathComponent("folders").path
        let sync = try u2.run("user", "sync", folders, "data:home", "--user", "u2", "--db", app.path, "--json", extraEnvironment: remote)
        try #require(sync.status == 0, "\(sync.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(sync.stdout.utf8)) as? [String: Any])
        #expect(report["applied"] as? Int == 1)
        #expect((report["downloaded"] as? [String])?.count == 1)
        #expect(report["accepted"] as? [String] == ["u1", "u2", "u3"])
        #expect(try SQLiteConnection(path: app.path).query("SELECT name FROM items ORDER BY id") { $0.string(0) ?? "" } == ["one", "from u1"])
        #expect(FileManager.default.fileExists(atPath: bucket.appendingPathComponent("home/u2/backup.sqlite").path), "backup.sqlite was not uploaded")
        // Exactly once: a second sync finds nothing new.
        let again = try u2.run("user", "sync", folders, "data:home", "--user", "u2", "--db", app.path, "--json", extraEnvironment: remote)
        let second = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any], "\(again.stderr)")
        #expect(second["applied"] as? Int == 0 && (second["downloaded"] as? [String])?.isEmpty == true)

        // u3 writes a change in u1's name, signed with u3's key; and an unsigned one.
        let forgedNew = u3.home.appendingPathComponent("forged.db"), base = u3.home.appendingPathComponent("base.db")
        try SQLiteConnection(path: base.path).execute(Self.schema + "INSERT INTO items VALUES (1, 'one'), (2, 'from u1');")
        try SQLiteConnection(path: forgedNew.path).execute(Self.schema + "INSERT INTO items VALUES (1, 'one'), (2, 'from u1'), (3, 'forged');")
        let forgedOut = u3.home.appendingPathComponent("forged").path
        let forged = try u3.run("db", "diff", base.path, forgedNew.path, "--sender", "u1", "--sign-key", "u3.sign", "-o", forgedOut)
        try #require(forged.status == 0, "\(forged.stderr)")
        let unsignedOut = u3.home.appendingPathComponent("unsigned").path
        let unsigned = try u3.run("db", "diff", base.path, forgedNew.path, "--sender", "u3", "-o", unsignedOut)
        try #require(unsigned.status == 0, "\(unsigned.stderr)")
        for file in [forged.stdout, unsigned.stdout] {
            let sent = try u3.run("user", "share", file.trimmingCharacters(in: .whitespacesAndNewlines), "data:home", "--to", "u2", extraEnvironment: remote)
            try #require(sent.status == 0, "\(sent.stderr)")
        }
        let refused = try u2.run("user", "sync", folders, "data:home", "--user", "u2", "--db", app.path, extraEnvironment: remote)
        #expect(refused.status == 9, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stdout.contains("0 applied, 2 refused"), "\(refused.stdout)")
        #expect(try SQLiteConnection(path: app.path).query("SELECT count(*) FROM items") { $0.int64(0) } == [2], "a refused diff changed the database")

        let status = try u2.run("user", "status", folders, "--user", "u2", "--db", app.path, "--json")
        let state = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status.stderr)")
        #expect(state["applied"] as? Int == 1)
        #expect((state["refused"] as? [[String: Any]])?.count == 2)
    }

    @Test("what a command cannot use is refused before anything is done", arguments: [
        (["user", "init", "DIR"], "needs --user"),
        (["user", "init", "DIR", "--user", "../u2"], "cannot name a key"),
        (["user", "sync", "DIR", "data:home", "--user", "nobody"], "no signing key"),
        (["user", "share", "x.sqlite", "data:home"], "needs --to"),
        (["user", "share", "x.sqlite", "data:home", "--to", "../u2"], "one folder name"),
        (["user", "frobnicate", "DIR"], "Unknown user action"),
        (["user", "sync", "DIR", "DIR2", "--user", "u1"], "not REMOTE:BASE"),
    ])
    func refused(_ arguments: [String], _ says: String) throws {
        let harness = try CLIHarness()
        let bucket = try TestFolder.make("buckia-user-refused")
        defer { TestFolder.remove(bucket) }
        let run = try harness.runArray(
            arguments.map { $0 == "DIR" ? harness.home.appendingPathComponent("folders").path : $0 },
            extraEnvironment: ["BUCKIA_REMOTE_DATA_PROVIDER": "local", "BUCKIA_REMOTE_DATA_ROOT": bucket.path])
        #expect(run.status != 0)
        #expect(run.stderr.contains(says), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: bucket.path).isEmpty, "the bucket was written to")
    }
}
