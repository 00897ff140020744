import BuckiaClient
import BuckiaCore
import BuckiaGateway
import BuckiaHTTP
import BuckiaOAuth
import BuckiaS3
import BuckiaSecurity
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing

/// An app's S3 provider whose credentials come from its login: a device login at the OAuth
/// emulator, its ID token traded at the gateway's STS, the credentials renewed before they
/// expire (one exchange for many callers), and a revoked login cut off once they are due. The
/// issuer, the gateway, the provider and the session read one clock the test moves.
@Suite("S3 credentials from a login: exchanged, renewed, and stopped by a revocation")
struct GatewayLoginCredentialsTests {
    /// The time, moved ahead by what the test has advanced it: real time keeps passing (the
    /// emulator issues tokens by it), so a loaded machine cannot leave this clock behind the
    /// issuer's. Each step the test takes is far from the bounds it checks.
    final class TestClock: @unchecked Sendable {
        private let lock = NSLock()
        private var offset: TimeInterval = 0
        var now: Date { Date().addingTimeInterval(lock.withLock { offset }) }
        func advance(_ seconds: Double) { lock.withLock { offset += seconds } }
        var read: @Sendable () -> Date { { self.now } }
    }

    struct Setup {
        let emulator: OAuthEmulator
        let gateway: GatewayHarness
        let session: OAuthSession
        let clock: TestClock

        func stop() {
            gateway.stop()
            emulator.stop()
        }

        /// Moves the test's clock and the issuer's together.
        func advance(_ seconds: Double) async throws {
            clock.advance(seconds)
            try await emulator.control("advance-clock", ["seconds": seconds])
        }

        /// The app's provider for the bucket `home`, with credentials from `settings`.
        func provider(_ settings: WebIdentitySettings) throws -> S3Provider {
            var s3 = try S3Settings.resolve(gateway.s3Configuration(bucket: "home"), environment: TestHome.processEnvironment)
            s3.webIdentity = settings
            return S3Provider(settings: s3, now: clock.read, retryPolicy: .none)
        }

        func settings(duration: Duration = .seconds(900)) -> WebIdentitySettings {
            let session = self.session
            return WebIdentitySettings(
                stsEndpoint: gateway.endpoint, roleArn: GatewaySTSTests.role, sessionName: "app", duration: duration,
                token: { try await session.idToken().exposedValue })
        }
    }

    static func setUp() async throws -> Setup {
        let emulator = try await OAuthEmulator.start(accessTTL: 600)
        let clock = TestClock()
        let verifier = try WebIdentityVerifier(
            issuer: emulator.issuer.absoluteString, audiences: [emulator.clientId], keys: try await IssuerKeys.discover(issuer: emulator.issuer),
            clock: clock.read)
        let policy = try WebIdentityPolicy(verifier: verifier, grants: try GrantTemplate(parsing: GatewaySTSTests.template))
        let gateway = try GatewayHarness(
            configure: { options in
                options.webIdentity = policy
                options.clock = clock.read
            }, authenticatorClock: clock.read)
        try await gateway.createBucket("home")
        let shown = Locked<String?>(nil)
        let session = OAuthSession(
            configuration: OAuthConfiguration(issuer: emulator.issuer, clientId: emulator.clientId, name: "app"), store: InMemorySecretStore(),
            http: HTTPClient(configuration: .init(retryPolicy: .none)), clock: clock.read,
            sleep: { _ in
                // The user approves while the app waits for its first poll.
                if let code = shown.withLock({ $0 }) { try await emulator.control("approve", ["user_code": code, "sub": "u1"]) }
            })
        try await session.login { authorization in shown.withLock { $0 = authorization.userCode } }
        return Setup(emulator: emulator, gateway: gateway, session: session, clock: clock)
    }

    @Test("the provider gets its credentials from the login and renews them before they expire, unnoticed")
    func renewed() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let provider = try setup.provider(setup.settings(duration: .seconds(3600)))
        let source = try #require(provider.credentialSource as? WebIdentityCredentials)
        _ = try await provider.uploadData(Data("one".utf8), remotePath: try ObjectKey("u1/a.txt"), options: UploadOptions())
        #expect(await source.exchanges == 1)
        let first = try await source.credentials()
        // Well within the hour's credentials, less their 5-minute margin: the same ones.
        try await setup.advance(1000)
        _ = try await provider.uploadData(Data("two".utf8), remotePath: try ObjectKey("u1/b.txt"), options: UploadOptions())
        #expect(await source.exchanges == 1)
        // Inside the margin: renewed before the next request, which succeeds.
        try await setup.advance(2400)
        _ = try await provider.uploadData(Data("three".utf8), remotePath: try ObjectKey("u1/c.txt"), options: UploadOptions())
        #expect(await source.exchanges == 2)
        let second = try await source.credentials()
        #expect(second.accessKeyId != first.accessKeyId)
        // The old credentials, at this time, are what the renewal spared the app: refused.
        try await setup.advance(300)
        let old = try await Self.put(setup, "u1/d.txt", with: first)
        #expect(old.status == 400 && String(decoding: old.body, as: UTF8.self).contains("<Code>ExpiredToken</Code>"), "\(old.status) \(String(decoding: old.body, as: UTF8.self))")
        _ = try await provider.uploadData(Data("four".utf8), remotePath: try ObjectKey("u1/d.txt"), options: UploadOptions())
        // The app's client over the same provider lists with the renewed credentials.
        let client = BuckiaClient(provider: provider, configuration: setup.gateway.s3Configuration(bucket: "home"), environment: TestHome.processEnvironment)
        #expect(try await client.listFiles(path: "u1/").map(\.path.rawValue).sorted() == ["u1/a.txt", "u1/b.txt", "u1/c.txt", "u1/d.txt"])
        // What the template did not grant stays refused with login credentials too.
        await #expect(throws: BuckiaError.self) { _ = try await provider.uploadData(Data("x".utf8), remotePath: try ObjectKey("u2/a.txt"), options: UploadOptions()) }
        #expect(provider.capabilities.supports(.presign) == false)
    }

    @Test("callers that find the credentials due at once share one exchange")
    func oneExchange() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let source = WebIdentityCredentials(settings: setup.settings(), http: HTTPClient(), clock: setup.clock.read)
        let identities = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<16 { group.addTask { try await source.credentials().accessKeyId } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(identities.count == 1)
        #expect(await source.exchanges == 1)
        let calls = setup.gateway.log.withLock { $0.filter { $0.operation == "AssumeRoleWithWebIdentity" } }
        #expect(calls.count == 1)
    }

    @Test("a login revoked at the issuer keeps working until its credentials are due, then stops")
    func revoked() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let provider = try setup.provider(setup.settings())
        _ = try await provider.uploadData(Data("one".utf8), remotePath: try ObjectKey("u1/a.txt"), options: UploadOptions())
        try await setup.emulator.control("revoke-all")
        // The credentials in hand are still good: revocation bites at the next exchange.
        _ = try await provider.uploadData(Data("two".utf8), remotePath: try ObjectKey("u1/b.txt"), options: UploadOptions())
        // Past the credentials' margin and the ID token's life: the refresh the next exchange
        // needs is refused, and so is the request.
        try await setup.advance(700)
        let error = await #expect(throws: BuckiaError.self) {
            _ = try await provider.uploadData(Data("three".utf8), remotePath: try ObjectKey("u1/c.txt"), options: UploadOptions())
        }
        #expect(error?.code == .unauthorized && error?.message.contains("log in again") == true, "\(error.map { "\($0)" } ?? "none")")
        #expect(try await setup.gateway.provider.exists(remotePath: "home/u1/c.txt") == false)
    }

    @Test("STS's refusals reach the app as errors it can act on", arguments: [
        ("a token the gateway does not trust", "not-a-token", BuckiaError.Code.unauthorized),
        ("a subject no folder can be named after", "SUB:../u2", .permissionDenied),
    ])
    func refusals(_ name: String, _ token: String, _ code: BuckiaError.Code) async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let emulator = setup.emulator
        var settings = setup.settings()
        settings.token = {
            token.hasPrefix("SUB:") ? try await emulator.idToken(sub: String(token.dropFirst(4))) : token
        }
        let source = WebIdentityCredentials(settings: settings, http: HTTPClient(configuration: .init(retryPolicy: .none)))
        let error = await #expect(throws: BuckiaError.self, "\(name)") { _ = try await source.credentials() }
        #expect(error?.code == code, "\(name): \(error.map { "\($0)" } ?? "none")")
        #expect(error.map { "\($0)" }?.contains(token) != true || token.hasPrefix("SUB:"), "the error holds the token")
    }

    /// A PUT signed with `credentials` at the test clock's time.
    static func put(_ setup: Setup, _ key: String, with credentials: AWSCredentials) async throws -> RawHTTP.Answer {
        let target = "/home/" + key
        guard let url = URL(string: setup.gateway.endpoint.absoluteString + target) else { throw BuckiaError(.invalidPath, "bad key \(key)") }
        let body = Data("late".utf8)
        let signed = SigV4Signer(credentials: credentials, region: "us-east-1", service: "s3")
            .sign(method: "PUT", url: url, headers: [:], payloadHash: Hashing.sha256Hex(body), date: setup.clock.now)
        return try await RawHTTP.exchange(
            port: UInt16(setup.gateway.endpoint.port ?? 0), method: "PUT", target: target, headers: signed.map { ($0.key, $0.value) }, body: body)
    }
}
