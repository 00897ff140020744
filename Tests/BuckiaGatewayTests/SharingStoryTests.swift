import BuckiaClient
import BuckiaCore
import BuckiaDatabase
import BuckiaGateway
import BuckiaHTTP
import BuckiaLocal
import BuckiaOAuth
import BuckiaS3
import BuckiaSecurity
import BuckiaSQLite
import BuckiaTestSupport
import Foundation
import Testing

/// Seed 002's story, end to end, over the gateway in front of a local folder and in front of
/// Ceph's RADOS Gateway. Three users each hold only what `AssumeRoleWithWebIdentity` gave their
/// login (the OAuth emulator's ID tokens, through AWS's own variables): u1 publishes keys and
/// shares a sealed, signed change with u2; u2's folder sync applies it once and records it as
/// u1's; u3 can neither read nor list u2's inbound, nor replace or delete u1's file there, nor
/// publish keys as u1, and the change u3 signs in u1's name is refused by u2 and changes nothing.
@Suite("The sharing story: three users, credentials from their logins, over the gateway")
struct SharingStoryTests {
    enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
        case folder, cephRGW
        var description: String { self == .folder ? "a local folder" : "Ceph RGW" }
    }

    static let template = [
        "read,list,write,delete:data/home/${sub}/", "deliver:data/home/*/inbound/", "read,list:data/keys/", "write:data/keys/${sub}.jwk",
    ]
    static let schema = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"

    /// One user: their login's token file, their keys and their provider through the gateway.
    struct User {
        let id: String
        let environment: [String: String]
        let keys: UserKeys
        let provider: any StorageProvider
    }

    static func gateway(_ backend: Backend, policy: WebIdentityPolicy) async throws -> GatewayHarness {
        switch backend {
        case .folder:
            return try GatewayHarness { $0.webIdentity = policy }
        case .cephRGW:
            let server = try await S3TestServer.shared(.cephRGW)
            let bucket = "story-" + UUID().uuidString.lowercased().prefix(12)
            _ = try await HTTPClient().send(server.signedRequest(.put, bucket: String(bucket)))
            let state = try TestFolder.make("buckia-story-state")
            let configuration = BuckiaConfiguration(
                provider: .s3, bucketName: String(bucket),
                authConfig: .awsSignature(accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey.exposedValue),
                options: ["endpoint": server.endpoint.absoluteString, "region": server.region, "stateDirectory": state.path, "vendor": "ceph"])
            let provider = S3Provider(settings: try S3Settings.resolve(configuration, environment: [:], home: TestHome.empty))
            return try GatewayHarness(provider: provider, removing: state) { $0.webIdentity = policy }
        }
    }

    @Test("u1 shares with u2; u3 can do nothing to it", arguments: Backend.allCases)
    func story(_ backend: Backend) async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let verifier = try WebIdentityVerifier(
            issuer: emulator.issuer.absoluteString, audiences: [emulator.clientId], keys: try await IssuerKeys.discover(issuer: emulator.issuer))
        let gateway = try await Self.gateway(backend, policy: try WebIdentityPolicy(verifier: verifier, grants: try GrantTemplate(parsing: Self.template)))
        defer { gateway.stop() }
        try await gateway.createBucket("data")
        let work = try TestFolder.make("buckia-story")
        defer { TestFolder.remove(work) }
        var registry = ProviderRegistry()
        try registry.register(S3Provider.self)

        // Each user's login, as an app on a phone has it: an ID token in a file AWS's variables
        // name, and nothing else. No bucket key anywhere.
        var users: [String: User] = [:]
        for id in ["u1", "u2", "u3"] {
            let tokenFile = work.appendingPathComponent("\(id).token")
            try Data(try await emulator.idToken(sub: id).utf8).write(to: tokenFile)
            let environment = TestHome.processEnvironment.merging([
                "AWS_WEB_IDENTITY_TOKEN_FILE": tokenFile.path, "AWS_ROLE_ARN": GatewaySTSTests.role, "AWS_ROLE_SESSION_NAME": "\(id)-phone",
                "AWS_ENDPOINT_URL_STS": gateway.endpoint.absoluteString,
            ]) { $1 }
            let provider = try registry.makeProvider(for: Self.configuration(gateway), environment: environment, resources: .tests)
            let keys = try UserKeys.stored(for: id, in: TokenManager(store: InMemorySecretStore()), create: true)
            try await keys.publish(for: id, to: provider, prefix: "keys/")
            users[id] = User(id: id, environment: environment, keys: keys, provider: provider)
        }
        let u1 = try #require(users["u1"]), u2 = try #require(users["u2"]), u3 = try #require(users["u3"])

        // u3 cannot publish keys as u1: u1's key set stays u1's.
        let published = try await gateway.provider.readData(remotePath: try ObjectKey("data/keys/u1.jwk"), options: ReadOptions())
        let forgedKeys = await #expect(throws: BuckiaError.self) { try await u3.keys.publish(for: "u1", to: u3.provider, prefix: "keys/") }
        #expect(forgedKeys?.code == .permissionDenied)
        #expect(try await gateway.provider.readData(remotePath: try ObjectKey("data/keys/u1.jwk"), options: ReadOptions()) == published)

        // u1's change, signed, sealed to u2's published key, delivered to u2's inbound.
        let old = work.appendingPathComponent("old.db"), new = work.appendingPathComponent("new.db")
        try SQLiteConnection(path: old.path).execute(Self.schema + "INSERT INTO notes VALUES (1, 'hello');")
        try SQLiteConnection(path: new.path).execute(Self.schema + "INSERT INTO notes VALUES (1, 'hello'), (2, 'from u1');")
        let outbox = try TestFolder.make("buckia-story-outbox")
        defer { TestFolder.remove(outbox) }
        let diff = try #require(try DatabaseComparison.diff(from: old, to: new, sender: "u1", in: outbox, signingKey: u1.keys.signing))
        let u2Public = try #require(try await SenderKeys.fetch(["u2"], from: u1.provider).recipientKeys["u2"]?.values.first)
        let sent = try await DatabaseManager.send(diff, toUserFolder: "home/u2", through: u1.provider, sealedFor: u2Public)
        let deliveredBytes = try await gateway.provider.readData(remotePath: try ObjectKey("data/" + sent.rawValue), options: ReadOptions())
        #expect(deliveredBytes.range(of: Data("from u1".utf8)) == nil, "the bucket holds the change in the clear")

        // u3 against u1's file in u2's inbound: no read, no listing, no replacement, no delete.
        await #expect(throws: BuckiaError.self) { _ = try await u3.provider.readData(remotePath: sent, options: ReadOptions()) }
        await #expect(throws: BuckiaError.self) { _ = try await u3.provider.listFiles(path: "home/u2/inbound/") }
        await #expect(throws: BuckiaError.self) {
            _ = try await u3.provider.uploadData(Data("replaced".utf8), remotePath: sent, options: UploadOptions())
        }
        await #expect(throws: BuckiaError.self) { try await u3.provider.deleteFile(remotePath: sent) }
        #expect(try await gateway.provider.readData(remotePath: try ObjectKey("data/" + sent.rawValue), options: ReadOptions()) == deliveredBytes)

        // u3's change in u1's name, signed with u3's key, delivered as any change is.
        let forgedNew = work.appendingPathComponent("forged.db")
        try SQLiteConnection(path: forgedNew.path).execute(Self.schema + "INSERT INTO notes VALUES (1, 'hello'), (2, 'from u1'), (3, 'forged');")
        let forged = try #require(try DatabaseComparison.diff(from: new, to: forgedNew, sender: "u1", in: outbox, signingKey: u3.keys.signing))
        try await DatabaseManager.send(forged, toUserFolder: "home/u2", through: u3.provider)

        // u2's folder sync: u2's contacts are u1 and u3, their keys as published.
        let app = work.appendingPathComponent("u2-app.db")
        try SQLiteConnection(path: app.path).execute(Self.schema + "INSERT INTO notes VALUES (1, 'hello');")
        var options = DatabaseManager.Options(signingKey: u2.keys.signing)
        options.apply.senders = .signed(by: try await SenderKeys.fetch(["u1", "u3"], from: u2.provider), accepting: ["u1", "u3"])
        options.apply.recipientKeys = [u2.keys.sealing]
        let manager = DatabaseManager(
            folderStructure: FolderStructureConfiguration(rootPath: work.appendingPathComponent("folders").path, userId: "u2"), database: app, options: options)
        let folder = try manager.userFolder()
        for sub in [folder.originals, folder.reworked, folder.inbound] { try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true) }
        let client = try await BuckiaClient(configuration: Self.configuration(gateway), registry: registry, environment: u2.environment, resources: .tests)
        let first = try await client.syncUserFolder(folder, remoteBase: "home/", applier: manager)
        #expect(first.inbound.count == 2)
        let rows = try SQLiteConnection(path: app.path).query("SELECT body FROM notes ORDER BY id") { $0.string(0) ?? "" }
        #expect(rows == ["hello", "from u1"], "u1's change applied, u3's forgery not")
        let senders = try SQLiteConnection(path: app.path).query("SELECT sender FROM buckia_applied_changes") { $0.string(0) ?? "" }
        #expect(senders == ["u1"])
        let status = try await manager.status()
        #expect(status.refused.count == 1, "\(status.refused)")
        #expect(status.refused.first?.reason.contains("u3.sign") == true, "\(status.refused)")

        // Exactly once: the next sync (after the app's backup, the seed's sequence) fetches and
        // applies nothing, and uploads the backup.
        try await manager.backupDatabase()
        let second = try await client.syncUserFolder(folder, remoteBase: "home/", applier: manager)
        #expect(second.inbound.isEmpty)
        #expect(try SQLiteConnection(path: app.path).query("SELECT count(*) FROM buckia_applied_changes") { $0.int64(0) } == [1])
        #expect(try await gateway.provider.readData(remotePath: try ObjectKey("data/home/u2/backup.sqlite"), options: ReadOptions()).isEmpty == false)
    }

    /// The S3 remote of the bucket `data` at the gateway, with no keys of its own: credentials
    /// come from the environment's login.
    static func configuration(_ gateway: GatewayHarness) -> BuckiaConfiguration {
        BuckiaConfiguration(
            provider: .s3, bucketName: "data", authConfig: AuthenticationConfiguration(method: .awsSignature),
            options: [
                "endpoint": gateway.endpoint.absoluteString, "region": "us-east-1", "vendor": "buckia", "addressingStyle": "path",
                "stateDirectory": FileManager.default.temporaryDirectory.appendingPathComponent("buckia-story-s3-\(UUID().uuidString)").path,
            ].merging(gateway.backendCapabilities.supports(.userMetadata) ? [:] : ["userMetadata": "false"]) { $1 }
                .merging(gateway.backendCapabilities.supports(.conditionalWrite) ? [:] : ["conditionalWrites": "false"]) { $1 })
    }
}
