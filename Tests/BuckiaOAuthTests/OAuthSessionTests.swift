import BuckiaCore
import BuckiaHTTP
import BuckiaSecurity
import BuckiaTestSupport
import Foundation
import Testing

@testable import BuckiaOAuth

/// A clock the test moves by hand, and a sleep that records instead of waiting.
final class ManualTime: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_800_000_000)
    private var slept: [Duration] = []
    var onSleep: (@Sendable (Int) async throws -> Void)?

    var now: Date { lock.withLock { current } }
    var sleeps: [Duration] { lock.withLock { slept } }
    func advance(_ seconds: Double) { lock.withLock { current = current.addingTimeInterval(seconds) } }
    var clock: @Sendable () -> Date { { self.now } }
    var sleep: @Sendable (Duration) async throws -> Void {
        { duration in
            let count = self.lock.withLock {
                self.slept.append(duration)
                self.current = self.current.addingTimeInterval(Double(duration.components.seconds))
                return self.slept.count
            }
            try await self.onSleep?(count)
        }
    }
}

/// A store whose calls block as a file store's do, so the session runs them on the blocking
/// pool and awaits them. It can hold a call to a context after the call did its work, until
/// the test releases it: that opens the window between a store call and what the session does
/// next.
final class HoldingSecretStore: SecretStore {
    /// One call held: the test waits until it is reached, then releases it.
    final class Hold: Sendable {
        fileprivate let key: String
        fileprivate let gate = DispatchSemaphore(value: 0)
        private let reachedStream: AsyncStream<Void>
        fileprivate let reachedContinuation: AsyncStream<Void>.Continuation
        private let reachedFlag = Locked(false)

        /// Whether the call has been held.
        var wasReached: Bool { reachedFlag.withLock { $0 } }

        fileprivate func markReached() {
            reachedFlag.withLock { $0 = true }
            reachedContinuation.yield()
        }

        fileprivate init(key: String) {
            self.key = key
            (reachedStream, reachedContinuation) = AsyncStream.makeStream()
        }

        /// Returns once the call is held.
        func reached() async {
            var iterator = reachedStream.makeAsyncIterator()
            _ = await iterator.next()
        }

        /// Lets the held call return.
        func release() { gate.signal() }
    }

    let base = InMemorySecretStore()
    private let holds = Locked<[Hold]>([])
    private let made = Locked<[Hold]>([])

    var callsBlock: Bool { true }

    /// Holds the next `operation` ("load", "save", "delete") of `context`.
    func holdNext(_ operation: String, of context: String) -> Hold {
        let hold = Hold(key: operation + " " + context)
        holds.withLock { $0.append(hold) }
        made.withLock { $0.append(hold) }
        return hold
    }

    /// Lets every call held now or later return: what a test does on its way out, whatever
    /// failed, so no pool thread stays held.
    func releaseAll() {
        holds.withLock { $0.removeAll() }
        for hold in made.withLock({ $0 }) { hold.release() }
    }

    private func pass(_ operation: String, _ context: String) {
        let hold = holds.withLock { holds in
            holds.firstIndex { $0.key == operation + " " + context }.map { holds.remove(at: $0) }
        }
        guard let hold else { return }
        hold.markReached()
        hold.gate.wait()
    }

    func save(_ secret: StoredSecret, for context: String) throws {
        try base.save(secret, for: context)
        pass("save", context)
    }

    func load(_ context: String) throws -> StoredSecret? {
        let found = try base.load(context)
        pass("load", context)
        return found
    }

    func delete(_ context: String) throws -> Bool {
        let had = try base.delete(context)
        pass("delete", context)
        return had
    }

    func entries() throws -> [SecretEntry] { try base.entries() }
}

/// Checks `condition` until it holds, yielding between checks: for a state another task reaches
/// whenever the machine gets to it, so no count of rounds or of seconds decides. Each use also
/// stops at an outcome that rules the state out, and says so.
func eventually(_ condition: () async throws -> Bool) async rethrows {
    while try await !condition() { await Task.yield() }
}

@Suite("OAuth login and refresh against the emulator")
struct OAuthSessionTests {
    func session(_ emulator: OAuthEmulator, store: any SecretStore, time: ManualTime, pool: BlockingPool? = nil) -> OAuthSession {
        OAuthSession(
            configuration: OAuthConfiguration(issuer: emulator.issuer, clientId: emulator.clientId, name: "test"), store: store,
            http: HTTPClient(configuration: .init(retryPolicy: .none)), clock: time.clock, sleep: time.sleep, pool: pool)
    }

    /// Logs in, approving after `pendingPolls` polls, with `slowDowns` slow_down answers first.
    func login(_ session: OAuthSession, _ emulator: OAuthEmulator, time: ManualTime, pendingPolls: Int = 2) async throws -> DeviceAuthorization {
        let shown = Locked<DeviceAuthorization?>(nil)
        time.onSleep = { count in
            if count == pendingPolls + 1, let code = shown.withLock({ $0?.userCode }) {
                try await emulator.control("approve", ["user_code": code, "sub": "alice"])
            }
        }
        try await session.login { authorization in shown.withLock { $0 = authorization } }
        return try #require(shown.withLock { $0 })
    }

    /// A fresh emulator and a session logged in to it.
    func loggedIn(rotate: Bool = true) async throws -> (OAuthEmulator, InMemorySecretStore, ManualTime, OAuthSession) {
        let emulator = try await OAuthEmulator.start(rotate: rotate)
        let store = InMemorySecretStore()
        let time = ManualTime()
        let session = session(emulator, store: store, time: time)
        do {
            _ = try await login(session, emulator, time: time)
        } catch {
            emulator.stop()
            throw error
        }
        return (emulator, store, time, session)
    }

    @Test("Device login: the code is shown, polls wait the interval, and the tokens are saved")
    func deviceLogin() async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let store = InMemorySecretStore()
        let time = ManualTime()
        let session = session(emulator, store: store, time: time)
        let shown = try await login(session, emulator, time: time, pendingPolls: 2)
        #expect(shown.userCode.count == 9)
        #expect(shown.verificationURI.absoluteString.hasPrefix(emulator.issuer.absoluteString))
        #expect(time.sleeps == [.seconds(5), .seconds(5), .seconds(5)])
        #expect(try await emulator.tokenRequests("urn:ietf:params:oauth:grant-type:device_code") == 3)
        let access = try await session.accessToken()
        #expect(try await emulator.accepts(access.exposedValue))
        #expect(try store.load("oauth/test/refresh") != nil)
        #expect(try store.load("oauth/test/access")?.expiresAt == time.now.addingTimeInterval(300))
    }

    @Test("slow_down adds five seconds to the interval for good (RFC 8628 §3.5)")
    func slowDown() async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        try await emulator.control("slow-down", ["count": 2])
        let time = ManualTime()
        let session = session(emulator, store: InMemorySecretStore(), time: time)
        _ = try await login(session, emulator, time: time, pendingPolls: 3)
        #expect(time.sleeps == [.seconds(5), .seconds(10), .seconds(15), .seconds(15)])
    }

    @Test("A server interval of 0 still waits a second between polls")
    func zeroInterval() async throws {
        let emulator = try await OAuthEmulator.start(interval: 0)
        defer { emulator.stop() }
        let time = ManualTime()
        _ = try await login(session(emulator, store: InMemorySecretStore(), time: time), emulator, time: time, pendingPolls: 2)
        #expect(time.sleeps == [.seconds(1), .seconds(1), .seconds(1)])
    }

    @Test("A logout while a refresh is in flight wins: the refresh's answer is not saved after it")
    func logoutDuringRefresh() async throws {
        let (emulator, store, time, session) = try await loggedIn()
        defer { emulator.stop() }
        time.advance(3600)
        try await emulator.control("hold", ["grant": "refresh_token"])
        let refreshEnded = Locked(false)
        let refreshing = Task {
            defer { refreshEnded.withLock { $0 = true } }
            return try await session.accessToken()
        }
        // Until the refresh is held at the emulator (or has already ended, which the test then reports).
        try await eventually { try await emulator.stats()["held"] as? Int ?? 0 >= 1 || refreshEnded.withLock { $0 } }
        let logoutEnded = Locked(false)
        let logout = Task {
            defer { logoutEnded.withLock { $0 = true } }
            return try await session.logout(revoke: false)
        }
        // Release the refresh only once the logout is waiting for it (or has ended without waiting).
        await eventually { await session.settling >= 1 || logoutEnded.withLock { $0 } }
        #expect(!logoutEnded.withLock { $0 }, "the logout never waited for the refresh")
        try await emulator.control("hold")
        _ = try await refreshing.value
        #expect(try await logout.value)
        #expect(try store.entries().isEmpty)
    }

    /// Runs `body` with a fresh emulator and a session logged in to it, keeping its tokens in a
    /// store whose calls run on a pool of the test's own: a held call holds one of its threads,
    /// never one of the process's pool, which every other test shares.
    func withLoggedInHolding(_ body: (OAuthEmulator, HoldingSecretStore, ManualTime, OAuthSession) async throws -> Void) async throws {
        let emulator = try await OAuthEmulator.start()
        let pool = BlockingPool(threads: 4)
        let store = HoldingSecretStore()
        let time = ManualTime()
        let session = session(emulator, store: store, time: time, pool: pool)
        do {
            _ = try await login(session, emulator, time: time)
            try await body(emulator, store, time, session)
        } catch {
            store.releaseAll()
            emulator.stop()
            await pool.shutdown()
            throw error
        }
        store.releaseAll()
        emulator.stop()
        await pool.shutdown()
    }

    /// Starts a login (its code goes to `shown`) and returns it once `saveHeld` holds its save;
    /// nil, with the issue recorded, when the login ended before it saved.
    func loginHeldInSave(
        _ session: OAuthSession, shown: Locked<String?>, saveHeld: HoldingSecretStore.Hold
    ) async -> Task<Void, any Error>? {
        let loginEnded = Locked(false)
        let login = Task {
            defer { loginEnded.withLock { $0 = true } }
            try await session.login { authorization in shown.withLock { $0 = authorization.userCode } }
        }
        await eventually { saveHeld.wasReached || loginEnded.withLock { $0 } }
        guard saveHeld.wasReached else {
            Issue.record("the login ended before it saved: \(await login.result)")
            return nil
        }
        return login
    }

    /// The window a store that is awaited opens: the logout has read the refresh token and
    /// waits in the store when a caller asks for a token. The refresh that would follow must send
    /// nothing: a token it rotated now would be saved after the logout's deletes, or outlive the
    /// logout's revocation.
    @Test("A refresh asked for while a logout waits in the store sends nothing, and the logout leaves nothing")
    func refreshDuringLogoutInStore() async throws {
        try await withLoggedInHolding { emulator, store, time, session async throws in
            time.advance(3600)
            let held = store.holdNext("load", of: "oauth/test/refresh")
            let logout = Task { try await session.logout(revoke: false) }
            await held.reached()

            let failure = await #expect(throws: OAuthFailure.self) { try await session.accessToken() }
            #expect(failure?.kind == .loginRequired)
            #expect(try await emulator.tokenRequests("refresh_token") == 0, "a refresh was sent during the logout")
            held.release()
            #expect(try await logout.value)
            #expect(try store.base.entries().isEmpty, "the refresh saved the login again after the logout")
        }
    }

    /// A refresh is sent during a new login's polls (with the old refresh token), and its answer
    /// comes while the login saves its tokens: the refresh waits for the save, then finds the
    /// login changed and saves nothing over the new tokens.
    @Test("A refresh whose answer comes while a new login saves its tokens saves nothing over them")
    func refreshDuringLoginSave() async throws {
        try await withLoggedInHolding { emulator, store, time, session async throws in
            time.advance(3600)
            try await emulator.control("hold", ["grant": "refresh_token"])
            let refreshing = Locked<Task<Secret, any Error>?>(nil)
            let refreshEnded = Locked(false)
            let shown = Locked<String?>(nil)
            let saveHeld = store.holdNext("save", of: "oauth/test/refresh")
            // The clock counts every sleep of the session: this login's first is the next one.
            let firstSleep = time.sleeps.count + 1
            time.onSleep = { count in
                guard count == firstSleep else { return }
                // During the login's first wait between polls, a caller asks for a token: the
                // refresh goes out with the old login's refresh token and waits at the emulator.
                let task = Task {
                    defer { refreshEnded.withLock { $0 = true } }
                    return try await session.accessToken()
                }
                refreshing.withLock { $0 = task }
                try await eventually { try await emulator.stats()["held"] as? Int ?? 0 >= 1 || refreshEnded.withLock { $0 } }
                if let code = shown.withLock({ $0 }) { try await emulator.control("approve", ["user_code": code, "sub": "alice"]) }
            }
            // The login is inside its save, the new refresh token written, holding the gate.
            guard let login = await loginHeldInSave(session, shown: shown, saveHeld: saveHeld) else { return }
            #expect(!refreshEnded.withLock { $0 }, "the refresh ended before the login saved")
            let loginsRefreshToken = try #require(try store.base.load("oauth/test/refresh")).value
            try await emulator.control("hold")
            await eventually { await session.waitingForGate >= 1 || refreshEnded.withLock { $0 } }
            #expect(!refreshEnded.withLock { $0 }, "the refresh did not wait for the login's save")
            saveHeld.release()
            try await login.value

            let task = try #require(refreshing.withLock { $0 })
            let failure = await #expect(throws: OAuthFailure.self) { try await task.value }
            #expect(failure?.kind == .loginRequired)
            #expect(try store.base.load("oauth/test/refresh")?.value == loginsRefreshToken, "the refresh saved its tokens over the new login's")
        }
    }

    /// A new login is inside its save (the refresh token written, the access token not yet)
    /// when a logout comes to delete the login: the logout waits for the whole save, then deletes,
    /// so no token of the save is left behind.
    @Test("A logout waits for a login's save in the store to end, then deletes every token it saved")
    func logoutWaitsForSave() async throws {
        try await withLoggedInHolding { emulator, store, time, session async throws in
            let shown = Locked<String?>(nil)
            let saveHeld = store.holdNext("save", of: "oauth/test/refresh")
            // The clock counts every sleep of the session: this login's first is the next one.
            let firstSleep = time.sleeps.count + 1
            time.onSleep = { count in
                if count == firstSleep, let code = shown.withLock({ $0 }) { try await emulator.control("approve", ["user_code": code, "sub": "alice"]) }
            }
            guard let login = await loginHeldInSave(session, shown: shown, saveHeld: saveHeld) else { return }

            let logoutEnded = Locked(false)
            let logout = Task {
                defer { logoutEnded.withLock { $0 = true } }
                return try await session.logout(revoke: false)
            }
            // Until the logout waits for the gate, or has ended without waiting.
            await eventually { await session.waitingForGate >= 1 || logoutEnded.withLock { $0 } }
            #expect(!logoutEnded.withLock { $0 }, "the logout deleted the login while a login's save was in flight")
            saveHeld.release()
            try await login.value
            #expect(try await logout.value)
            #expect(try store.base.entries().isEmpty, "a token of the login's save outlived the logout")
        }
    }

    /// A caller reads the expired token, and before its read returns another caller refreshes;
    /// the first caller must take that refresh's token, not refresh a second time.
    @Test("A caller whose read raced a finished refresh takes its token instead of refreshing again")
    func readRacingRefresh() async throws {
        try await withLoggedInHolding { emulator, store, time, session async throws in
            time.advance(3600)
            let held = store.holdNext("load", of: "oauth/test/access")
            let slow = Task { try await session.accessToken() }
            await held.reached()

            let fresh = try await session.accessToken()
            #expect(try await emulator.tokenRequests("refresh_token") == 1)
            held.release()
            #expect(try await slow.value == fresh)
            #expect(try await emulator.tokenRequests("refresh_token") == 1, "the caller that raced the refresh refreshed again")
        }
    }

    /// As above, but the refresh fails (the server is briefly unavailable): the caller that
    /// raced it gets the same failure, as if it had joined it, rather than sending the refresh
    /// token a second time.
    @Test("A caller whose read raced a failed refresh gets its failure instead of refreshing again")
    func readRacingFailedRefresh() async throws {
        try await withLoggedInHolding { emulator, store, time, session async throws in
            time.advance(3600)
            try await emulator.control("unavailable", ["count": 1])
            let held = store.holdNext("load", of: "oauth/test/access")
            let slow = Task { try await session.accessToken() }
            await held.reached()

            let first = await #expect(throws: OAuthFailure.self) { try await session.accessToken() }
            #expect(first?.kind == .refused)
            held.release()
            let second = await #expect(throws: OAuthFailure.self) { try await slow.value }
            #expect(second == first)
            #expect(try await emulator.tokenRequests("refresh_token") == 1, "the caller that raced the failed refresh sent another")
        }
    }

    @Test("Many requests refused with one token cause one refresh")
    func replacement() async throws {
        let (emulator, _, _, session) = try await loggedIn()
        defer { emulator.stop() }
        let rejected = try await session.accessToken()
        let replacements = try await withThrowingTaskGroup(of: Secret.self) { group in
            for _ in 0..<10 { group.addTask { try await session.replacement(for: rejected) } }
            var all: [Secret] = []
            for try await token in group { all.append(token) }
            return all
        }
        #expect(Set(replacements.map(\.exposedValue)).count == 1)
        #expect(replacements[0] != rejected)
        // A late 401 for the old token, after the refresh: the new token, no second refresh.
        #expect(try await session.replacement(for: rejected) == replacements[0])
        #expect(try await emulator.tokenRequests("refresh_token") == 1)
    }

    @Test("A refused device login and an expired code are typed failures")
    func refusedLogin() async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let time = ManualTime()
        let shown = Locked<String?>(nil)
        time.onSleep = { count in
            if count == 1, let code = shown.withLock({ $0 }) { try await emulator.control("deny", ["user_code": code]) }
        }
        let denied = await #expect(throws: OAuthFailure.self) {
            try await session(emulator, store: InMemorySecretStore(), time: time).login { authorization in shown.withLock { $0 = authorization.userCode } }
        }
        #expect(denied?.kind == .accessDenied)

        let later = ManualTime()
        later.onSleep = { _ in later.advance(700) }
        let expired = await #expect(throws: OAuthFailure.self) {
            try await session(emulator, store: InMemorySecretStore(), time: later).login { _ in }
        }
        #expect(expired?.kind == .expired)
    }

    @Test("A token near expiry is refreshed once for 50 concurrent callers, and the rotated refresh token is saved")
    func singleRefresh() async throws {
        let (emulator, store, time, session) = try await loggedIn()
        defer { emulator.stop() }
        let first = try await session.accessToken()
        let firstRefresh = try #require(try store.load("oauth/test/refresh")).value
        #expect(try await emulator.tokenRequests("refresh_token") == 0)

        time.advance(300 - 30)  // inside the 60 s margin
        try await emulator.control("hold", ["grant": "refresh_token"])
        let tokens = try await withThrowingTaskGroup(of: Secret.self) { group in
            for _ in 0..<50 { group.addTask { try await session.accessToken() } }
            // Release the held refresh only once every caller is inside accessToken(): a session
            // without one shared refresh would have sent 50 by then.
            var rounds = 0
            while true {
                let inside = await session.callersWaiting
                let held = try await emulator.stats()["held"] as? Int ?? 0
                if inside == 50 && held >= 1 { break }
                rounds += 1
                #expect(rounds < 2_000, "the callers never all arrived")
                if rounds >= 2_000 { break }
                await Task.yield()
            }
            try await emulator.control("hold")
            var all: [Secret] = []
            for try await token in group { all.append(token) }
            return all
        }
        #expect(try await emulator.tokenRequests("refresh_token") == 1)
        #expect(Set(tokens.map(\.exposedValue)).count == 1)
        #expect(tokens[0] != first)
        #expect(try await emulator.accepts(tokens[0].exposedValue))
        let rotated = try #require(try store.load("oauth/test/refresh")).value
        #expect(rotated != firstRefresh)
    }

    @Test("A revoked login is loginRequired, says to log in again, and forgets the dead tokens")
    func revoked() async throws {
        let (emulator, store, time, session) = try await loggedIn()
        defer { emulator.stop() }
        try await emulator.control("revoke-all")
        time.advance(3600)
        let failure = await #expect(throws: OAuthFailure.self) { try await session.accessToken() }
        #expect(failure?.kind == .loginRequired)
        #expect(failure?.description.contains("log in again") == true)
        #expect(try store.entries().isEmpty)
    }

    @Test("A spent refresh token presented again revokes the login (rotation's theft detection)")
    func reuseDetection() async throws {
        let (emulator, store, time, session) = try await loggedIn()
        defer { emulator.stop() }
        let spent = try #require(try store.load("oauth/test/refresh"))
        time.advance(3600)
        _ = try await session.accessToken()
        // Put the spent token back, as a store restored from an old backup would.
        try store.save(spent, for: "oauth/test/refresh")
        try store.delete("oauth/test/access")
        // Within the server's reuse grace it still refreshes (a retry after a lost answer)…
        _ = try await session.accessToken()
        // …after it, it is theft, and the login ends.
        try store.save(spent, for: "oauth/test/refresh")
        try store.delete("oauth/test/access")
        try await emulator.control("advance-clock", ["seconds": 31])
        #expect((await #expect(throws: OAuthFailure.self) { try await session.accessToken() })?.kind == .loginRequired)
    }

    @Test("A stalled token endpoint times out without losing the saved refresh token, and the retry succeeds within the server's reuse grace")
    func stall() async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let store = InMemorySecretStore()
        let time = ManualTime()
        let quick = OAuthSession(
            configuration: OAuthConfiguration(issuer: emulator.issuer, clientId: emulator.clientId, name: "test"), store: store,
            // The client's own policy retries timeouts: the session must not let it, for a token request.
            http: HTTPClient(configuration: .init(timeout: .seconds(1))), clock: time.clock, sleep: time.sleep)
        _ = try await login(quick, emulator, time: time)
        let saved = try #require(try store.load("oauth/test/refresh"))
        time.advance(3600)
        try await emulator.control("stall", ["seconds": 3, "count": 1])
        await #expect(throws: BuckiaError.self) { try await quick.accessToken() }
        #expect(try store.load("oauth/test/refresh") == saved)
        #expect(try await emulator.accepts(try await quick.accessToken().exposedValue))
    }

    @Test("Without rotation the refresh token stays; logout revokes it at the server")
    func logout() async throws {
        let (emulator, store, time, session) = try await loggedIn(rotate: false)
        defer { emulator.stop() }
        let refresh = try #require(try store.load("oauth/test/refresh")).value
        time.advance(3600)
        let access = try await session.accessToken()
        #expect(try store.load("oauth/test/refresh")?.value == refresh)
        #expect(try await session.logout())
        #expect(try store.entries().isEmpty)
        #expect(try await !emulator.accepts(access.exposedValue))
        #expect((await #expect(throws: OAuthFailure.self) { try await session.accessToken() })?.kind == .loginRequired)
    }

    @Test("Plain http to a host other than this machine is refused before anything is sent")
    func insecure() async throws {
        let session = OAuthSession(
            configuration: OAuthConfiguration(issuer: URL(string: "http://id.example")!, clientId: "c", name: "test"), store: InMemorySecretStore())
        #expect((await #expect(throws: BuckiaError.self) { try await session.login { _ in } })?.code == .invalidConfiguration)
    }

    @Test("Okta and oauth authentication configurations name the issuer")
    func configurations() throws {
        let okta = try OAuthConfiguration(.okta(domain: "dev-1.okta.com", clientId: "abc"))
        #expect(okta.issuer.absoluteString == "https://dev-1.okta.com/oauth2/default")
        let oauth = try OAuthConfiguration(
            AuthenticationConfiguration(method: .oauth, credentials: ["issuer": "https://id.example", "clientId": "c", "scopes": "openid email"], tokenContext: "work"))
        #expect(oauth.scopes == ["openid", "email"] && oauth.name == "work")
        #expect(throws: BuckiaError.self) { try OAuthConfiguration(.apiKey("k")) }
        #expect(throws: BuckiaError.self) { try OAuthConfiguration(.okta(domain: "a/b", clientId: "c")) }
    }
}
