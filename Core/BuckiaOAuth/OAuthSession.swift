import BuckiaCore
import BuckiaHTTP
import BuckiaSecurity
import Foundation

/// An OAuth 2 login kept in a ``SecretStore``: the device authorization grant (RFC 8628) to log
/// in from a terminal, and access tokens refreshed shortly before they expire.
///
/// However many tasks ask ``accessToken()`` at once, one refresh request is in flight; every
/// caller gets its result. A rotated refresh token is saved before the new access token is
/// handed out, so a crash between the two never leaves only a spent refresh token behind.
/// Token requests are never retried automatically: a refresh whose answer was lost may have
/// rotated the token on the server, and presenting the old one again would look like theft
/// (RFC 9700 §4.14.2). A failed refresh keeps the stored refresh token for the next attempt,
/// unless the server says it is dead, which is ``OAuthFailure/Kind/loginRequired``.
///
/// The store is called through an ``AsyncSecretStore``, so a file store's lock and its
/// passphrase's key derivation never hold a thread of the cooperative pool. Every change to
/// the saved login (a login's save, a logout's deletes, a refresh's check that no login or
/// logout came since, and its save) holds one gate, and the steps of each change run as one
/// job: while the session awaits the store, no other change can come between a check and what
/// it guards. A refresh asked for during a logout sends nothing, and a caller whose read of the
/// store raced the end of a refresh takes that refresh's outcome, success or failure.
public actor OAuthSession {
    /// The login's configuration.
    public nonisolated let configuration: OAuthConfiguration
    private let secrets: AsyncSecretStore
    private let http: HTTPClient
    private let clock: @Sendable () -> Date
    private let sleep: @Sendable (Duration) async throws -> Void
    /// How long before expiry an access token is refreshed.
    public nonisolated let refreshMargin: Duration

    private var endpoints: Endpoints?
    private var refreshing: Task<Secret, any Error>?
    /// Bumped by login and logout: a refresh that began before one of them saves nothing.
    private var generation = 0
    /// Refreshes ended, whatever their outcome: a caller whose read of the store overlapped the
    /// end of one reads again, instead of taking what it replaced for stale and refreshing twice.
    private var refreshesEnded = 0
    /// How the last refresh to end ended: a caller that raced it takes its failure too, rather
    /// than presenting the same (perhaps already rotated) refresh token again.
    private var lastRefreshFailure: (any Error)?
    /// Logouts under way: a refresh asked for meanwhile sends nothing (the login is ending, and a
    /// token it rotated now would outlive the logout's revocation).
    private var logoutsUnderway = 0
    /// Whether a change to the saved login holds the gate, and who waits for it, in order.
    private var gateHeld = false
    private var gateWaiters: [CheckedContinuation<Void, Never>] = []
    /// Changes waiting for the gate now: for tests that hold one change inside the store.
    package private(set) var waitingForGate = 0
    /// Callers inside ``accessToken()`` now: for tests that prove one refresh serves them all.
    package private(set) var callersWaiting = 0
    /// Logins and logouts waiting for a refresh in flight to end: for tests of that order.
    package private(set) var settling = 0

    struct Endpoints: Sendable {
        var token: URL
        var device: URL?
        var revocation: URL?
    }

    /// Creates a session. `clock` and `sleep` are injected so tests need not wait for time;
    /// `pool` is where the store's blocking calls run (nil: ``BuckiaCore/SharedResources/process``'s).
    public init(
        configuration: OAuthConfiguration, store: any SecretStore, http: HTTPClient = HTTPClient(), refreshMargin: Duration = .seconds(60),
        clock: @escaping @Sendable () -> Date = { Date() }, sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        pool: BlockingPool? = nil
    ) {
        self.configuration = configuration
        self.secrets = AsyncSecretStore(store, pool: pool)
        self.http = http
        self.refreshMargin = refreshMargin
        self.clock = clock
        self.sleep = sleep
    }

    var accessContext: String { "oauth/\(configuration.name)/access" }
    var refreshContext: String { "oauth/\(configuration.name)/refresh" }
    var idContext: String { "oauth/\(configuration.name)/id" }

    // MARK: Device login

    /// Logs in with the device authorization grant: asks for a code, hands it to `present` (to
    /// print or show), polls until the user approves (slowing down when told), and saves the
    /// tokens.
    ///
    /// - Throws: ``OAuthFailure`` (`accessDenied`, `expired`, `refused`, `malformed`), or a
    ///   ``BuckiaError`` for transport failures.
    public func login(present: @Sendable (DeviceAuthorization) -> Void) async throws {
        await settleRefresh()
        generation += 1
        let endpoints = try await discover()
        guard let deviceEndpoint = endpoints.device else {
            throw OAuthFailure(kind: .refused, detail: "the issuer offers no device authorization endpoint")
        }
        let answer = try await post(deviceEndpoint, ["client_id": configuration.clientId, "scope": configuration.scopes.joined(separator: " ")])
        guard answer.status == 200 else { throw failure(answer, sent: []) }
        let object = try answer.object()
        guard let deviceCode = object["device_code"] as? String, let userCode = object["user_code"] as? String,
              let uriText = object["verification_uri"] as? String, let uri = URL(string: uriText)
        else { throw OAuthFailure(kind: .malformed, detail: "the device authorization lacks device_code, user_code or verification_uri") }
        // A device code lives at most 30 minutes here, and polls are at least a second apart,
        // whatever the server says (an interval of 0 would poll in a tight loop).
        let lifetime = min(Self.seconds(object["expires_in"]) ?? 600, 1800)
        var interval = Duration.seconds(max(Self.seconds(object["interval"]) ?? 5, 1))
        let expiresAt = clock().addingTimeInterval(Double(lifetime))
        present(DeviceAuthorization(
            userCode: userCode, verificationURI: uri, verificationURIComplete: (object["verification_uri_complete"] as? String).flatMap(URL.init(string:)),
            expiresAt: expiresAt, interval: interval))
        while true {
            try await sleep(interval)
            guard clock() < expiresAt else { throw OAuthFailure(kind: .expired, detail: "no approval in \(lifetime) s") }
            let poll = try await post(
                endpoints.token, ["grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": deviceCode, "client_id": configuration.clientId])
            if poll.status == 200 {
                let tokens = try tokens(from: try poll.object())
                try await exclusively {
                    try await keep(tokens)
                    // A refresh begun during the polls saves nothing over this login's tokens.
                    generation += 1
                }
                return
            }
            switch try poll.errorCode() {
            case "authorization_pending": continue
            case "slow_down": interval += .seconds(5)  // RFC 8628 §3.5: every slow_down adds 5 s for good
            case "access_denied": throw OAuthFailure(kind: .accessDenied, detail: "access_denied")
            case "expired_token": throw OAuthFailure(kind: .expired, detail: "expired_token")
            default: throw failure(poll, sent: [Secret(deviceCode)])
            }
        }
    }

    // MARK: Access tokens

    /// A live access token: the saved one while it has more than ``refreshMargin`` left (or half
    /// its lifetime, for tokens that live less than twice the margin), else a refreshed one.
    /// Concurrent callers share one refresh.
    ///
    /// - Throws: ``OAuthFailure`` `loginRequired` when there is no login or the server ended it.
    public func accessToken() async throws -> Secret {
        callersWaiting += 1
        defer { callersWaiting -= 1 }
        if let live = try await settledRead({ try await liveToken(accessContext) }) { return live }
        return try await sharedRefresh()
    }

    /// The login's OpenID Connect ID token, for trading at an STS (`AssumeRoleWithWebIdentity`):
    /// the saved one while it has more than ``refreshMargin`` left by its own `exp` (or half its
    /// lifetime), else the one a refresh brings. Concurrent callers share one refresh, with
    /// ``accessToken()``'s callers too.
    ///
    /// - Throws: ``OAuthFailure`` `loginRequired` when there is no login or the server ended it;
    ///   `malformed` when the issuer gives no ID token (the login did not ask for `openid`).
    public func idToken() async throws -> Secret {
        if let stored = try await settledRead({ try await liveToken(idContext) }) { return stored }
        _ = try await sharedRefresh()
        guard let fresh = try await liveToken(idContext) else {
            throw OAuthFailure(kind: .malformed, detail: "the issuer gave no current ID token; the login must ask for the openid scope")
        }
        return fresh
    }

    /// The token saved in `context` while it has more than ``refreshMargin`` left (or half its
    /// lifetime), else nil.
    private func liveToken(_ context: String) async throws -> Secret? {
        guard let stored = try await secrets.load(context), let expires = stored.expiresAt else { return nil }
        let margin = min(Double(refreshMargin.components.seconds), expires.timeIntervalSince(stored.savedAt) / 2)
        return expires.timeIntervalSince(clock()) > margin ? stored.value : nil
    }

    /// A token to use instead of `rejected`, which a resource server refused (401): the saved
    /// one when it is already another (a refresh happened since), else a refreshed one. Many
    /// requests refused at once cause one refresh, not one each.
    public func replacement(for rejected: Secret) async throws -> Secret {
        let other = try await settledRead {
            try await secrets.load(accessContext).flatMap { $0.value != rejected ? $0.value : nil }
        }
        if let other { return other }
        return try await sharedRefresh()
    }

    /// What `read` finds, read again when a refresh ended while it read: it may have read what
    /// that refresh replaced. So a caller that raced a refresh takes its result instead of
    /// starting another. (Three reads at most: each retry needs another refresh to end.)
    private func settledRead(_ read: () async throws -> Secret?) async throws -> Secret? {
        for _ in 0..<3 {
            let seen = refreshesEnded
            if let found = try await read() { return found }
            guard refreshesEnded != seen else { return nil }
            // The refresh that ended failed: its caller got the failure, and so does this one,
            // as if it had joined that refresh (a second one would send the same token again).
            if let lastRefreshFailure { throw lastRefreshFailure }
        }
        return nil
    }

    /// Runs `change` alone among the changes to the saved login, in the order they asked.
    private func exclusively<T>(_ change: () async throws -> T) async throws -> T {
        if gateHeld {
            waitingForGate += 1
            await withCheckedContinuation { gateWaiters.append($0) }
            waitingForGate -= 1
        } else {
            gateHeld = true
        }
        // The gate passes straight to the next in line, so no newcomer slips in between.
        defer {
            if gateWaiters.isEmpty { gateHeld = false } else { gateWaiters.removeFirst().resume() }
        }
        return try await change()
    }

    private func sharedRefresh() async throws -> Secret {
        if let refreshing { return try await refreshing.value }
        let task = Task { try await self.countedRefresh() }
        refreshing = task
        defer { refreshing = nil }
        return try await task.value
    }

    /// Waits for a refresh in flight to end, whatever its outcome: login and logout must not
    /// race one.
    private func settleRefresh() async {
        guard let refreshing else { return }
        settling += 1
        defer { settling -= 1 }
        do {
            _ = try await refreshing.value
        } catch {
            // Its failure is its callers' to see; here only its end matters.
        }
    }

    private func countedRefresh() async throws -> Secret {
        defer { refreshesEnded += 1 }
        do {
            let token = try await refresh()
            lastRefreshFailure = nil
            return token
        } catch {
            lastRefreshFailure = error
            throw error
        }
    }

    private func refresh(retried: Bool = false) async throws -> Secret {
        let generation = self.generation
        guard let refreshToken = try await secrets.load(refreshContext)?.value else {
            throw OAuthFailure(kind: .loginRequired, detail: "there is no saved login for \(configuration.name)")
        }
        let endpoints = try await discover()
        try checkGeneration(generation)
        guard logoutsUnderway == 0 else {
            throw OAuthFailure(kind: .loginRequired, detail: "a logout of \(configuration.name) is under way")
        }
        let answer = try await post(
            endpoints.token, ["grant_type": "refresh_token", "refresh_token": refreshToken.exposedValue, "client_id": configuration.clientId])
        try checkGeneration(generation)
        guard answer.status == 200 else {
            let code = try answer.errorCode()
            if code == "invalid_grant" {
                let (refreshKey, accessKey, idKey) = (refreshContext, accessContext, idContext)
                let rotated = try await exclusively {
                    try checkGeneration(generation)
                    return try await secrets.perform("forget a dead login") { store in
                        // Another process sharing the store may have rotated the token meanwhile:
                        // then this one is spent, not the login.
                        if let current = try store.load(refreshKey)?.value, current != refreshToken { return true }
                        // The refresh token is dead: keeping it would only fail again.
                        try store.delete(refreshKey)
                        try store.delete(accessKey)
                        try store.delete(idKey)
                        return false
                    }
                }
                guard rotated else { throw OAuthFailure(kind: .loginRequired, detail: "the server answered invalid_grant") }
                // Try once more with what is saved now.
                if !retried { return try await refresh(retried: true) }
            }
            throw failure(answer, sent: [refreshToken])
        }
        let tokens = try tokens(from: try answer.object())
        try await exclusively {
            try checkGeneration(generation)
            try await keep(tokens)
        }
        return tokens.access
    }

    /// Throws when a login or a logout came since `generation` was read: what a refresh begun
    /// before it brought must not be saved over it.
    private func checkGeneration(_ generation: Int) throws {
        guard generation == self.generation else {
            throw OAuthFailure(kind: .loginRequired, detail: "the login changed (a logout or a new login) while the refresh was in flight")
        }
    }

    /// The secrets of a token answer, in the order they are saved.
    struct Tokens: Sendable {
        var access: Secret
        var saves: [(context: String, secret: StoredSecret)]
    }

    /// Saves `tokens` in one job on the store: the refresh token first (when it rotated), then the
    /// access token, so a crash between the two never leaves only a spent refresh token behind.
    private func keep(_ tokens: Tokens) async throws {
        try await secrets.perform("save the login's tokens") { store in
            for save in tokens.saves { try store.save(save.secret, for: save.context) }
        }
    }

    /// Reads a token answer: the refresh token first (when it rotated), then the ID token, then
    /// the access token.
    private func tokens(from object: [String: Any]) throws -> Tokens {
        guard let access = object["access_token"] as? String, !access.isEmpty else {
            throw OAuthFailure(kind: .malformed, detail: "the token answer has no access_token")
        }
        if let type = object["token_type"] as? String, type.lowercased() != "bearer" {
            throw OAuthFailure(kind: .malformed, detail: "the token type is \(type.debugDescription), not Bearer")
        }
        let lifetime = Self.seconds(object["expires_in"]) ?? 3600
        let now = clock()
        var tokens = Tokens(access: Secret(access), saves: [])
        if let refresh = object["refresh_token"] as? String, !refresh.isEmpty {
            tokens.saves.append((refreshContext, StoredSecret(value: Secret(refresh), savedAt: now, metadata: ["issuer": configuration.issuer.absoluteString])))
        }
        if let id = object["id_token"] as? String, !id.isEmpty {
            // Its exp says when to fetch another; the token is checked by whoever it is shown to.
            guard let expires = Self.expiry(ofJWT: id) else { throw OAuthFailure(kind: .malformed, detail: "the id_token is not a JWT with an exp claim") }
            tokens.saves.append((idContext, StoredSecret(value: Secret(id), expiresAt: expires, savedAt: now, metadata: ["issuer": configuration.issuer.absoluteString])))
        }
        tokens.saves.append((
            accessContext,
            StoredSecret(value: Secret(access), expiresAt: now.addingTimeInterval(Double(lifetime)), savedAt: now, metadata: ["issuer": configuration.issuer.absoluteString])
        ))
        return tokens
    }

    /// Forgets the login, and revokes the refresh token at the server when it offers revocation.
    ///
    /// - Returns: Whether there was a login to forget.
    @discardableResult
    public func logout(revoke: Bool = true) async throws -> Bool {
        await settleRefresh()
        generation += 1
        logoutsUnderway += 1
        defer { logoutsUnderway -= 1 }
        let refresh = try await secrets.load(refreshContext)
        if revoke, let refresh, let endpoint = try await discover().revocation {
            // RFC 7009: the server answers 200 for a token it does not know too.
            let answer = try await post(endpoint, ["token": refresh.value.exposedValue, "token_type_hint": "refresh_token", "client_id": configuration.clientId])
            guard answer.status == 200 else { throw failure(answer, sent: [refresh.value]) }
        }
        let contexts = [accessContext, refreshContext, idContext]
        // No refresh can save after these deletes: the one in flight when the logout began has
        // ended (settleRefresh), and one asked for since sends nothing (logoutsUnderway). The
        // gate keeps the deletes apart from a login's save.
        return try await exclusively {
            try await secrets.perform("forget the login") { store in
                try contexts.reduce(false) { had, context in try store.delete(context) || had }
            }
        }
    }

    // MARK: HTTP

    private func discover() async throws -> Endpoints {
        if let endpoints { return endpoints }
        try Self.checkSecure(configuration.issuer)
        let url = configuration.issuer.appendingPathComponent(".well-known/openid-configuration")
        let response = try await http.send(HTTPRequest(.get, url))
        let object = try Answer(status: response.status, data: response.data).object()
        guard let tokenText = object["token_endpoint"] as? String, let token = URL(string: tokenText) else {
            throw OAuthFailure(kind: .malformed, detail: "the discovery document has no token_endpoint")
        }
        let found = Endpoints(
            token: token, device: (object["device_authorization_endpoint"] as? String).flatMap(URL.init(string:)),
            revocation: (object["revocation_endpoint"] as? String).flatMap(URL.init(string:)))
        for endpoint in [found.token, found.device, found.revocation].compactMap({ $0 }) { try Self.checkSecure(endpoint) }
        endpoints = found
        return found
    }

    /// Tokens travel only over https, or to a server on this machine.
    static func checkSecure(_ url: URL) throws {
        let loopback = ["127.0.0.1", "::1", "localhost"].contains(url.host ?? "")
        guard url.scheme == "https" || (url.scheme == "http" && loopback) else {
            throw BuckiaError(.invalidConfiguration, "The OAuth endpoint \(url.absoluteString) is not https; tokens travel only over https (or to this machine).")
        }
    }

    struct Answer {
        var status: Int
        var data: Data

        func object() throws -> [String: Any] {
            do {
                try JSONValidation.validate(data, maximumDepth: 8)
                if let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] { return object }
            } catch {}
            throw OAuthFailure(kind: .malformed, detail: "HTTP \(status) with a body that is not a JSON object")
        }

        func errorCode() throws -> String {
            guard let code = try object()["error"] as? String else {
                throw OAuthFailure(kind: .malformed, detail: "HTTP \(status) without an OAuth error code")
            }
            return code
        }
    }

    /// The refusal in an answer, its description cut to 200 characters, stripped of control
    /// characters (a terminal's escapes) and of any secret this request sent (some servers echo it).
    private func failure(_ answer: Answer, sent: [Secret]) -> OAuthFailure {
        var object: [String: Any] = [:]
        do {
            object = try answer.object()
        } catch {
            return OAuthFailure(kind: .malformed, detail: "HTTP \(answer.status) with a body that is not a JSON object")
        }
        func clean(_ text: String) -> String {
            var result = String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.properties.generalCategory != .control }).prefix(200))
            for secret in sent where !secret.isEmpty { result = result.replacingOccurrences(of: secret.exposedValue, with: "<REDACTED>") }
            return result
        }
        let code = (object["error"] as? String).map(clean) ?? "HTTP \(answer.status)"
        let description = (object["error_description"] as? String).map { ": " + clean($0) } ?? ""
        return OAuthFailure(kind: .refused, detail: code + description)
    }

    /// POSTs a form, once (token requests are not idempotent), and returns any final answer.
    private func post(_ url: URL, _ fields: [String: String]) async throws -> Answer {
        let body = fields.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.formEncode($0.value))" }.joined(separator: "&")
        var request = HTTPRequest(.post, url, body: .data(Data(body.utf8)), accepts: .all, retryPolicy: RetryPolicy.none)
        request.headers.set("Content-Type", "application/x-www-form-urlencoded")
        request.headers.set("Accept", "application/json")
        let response = try await http.send(request)
        return Answer(status: response.status, data: response.data)
    }

    /// The `exp` of a JWT's payload, unchecked: when to ask for another, nothing more.
    static func expiry(ofJWT token: String) -> Date? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])), payload.count <= 64 << 10 else { return nil }
        do {
            try JSONValidation.validate(payload, maximumDepth: 8)
            guard let object = try JSONSerialization.jsonObject(with: payload) as? [String: Any], let exp = object["exp"] as? NSNumber,
                  exp.doubleValue.isFinite, (0...253_402_300_799).contains(exp.doubleValue)
            else { return nil }
            return Date(timeIntervalSince1970: exp.doubleValue)
        } catch {
            return nil
        }
    }

    static func formEncode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    static func seconds(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber, number.doubleValue.isFinite, number.doubleValue >= 0, number.doubleValue <= 31_536_000 else { return nil }
        return Int64(number.doubleValue)
    }
}
