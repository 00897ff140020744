import BuckiaCore
import BuckiaHTTP
import BuckiaSecurity
import Foundation

/// An OpenID Connect issuer's signing keys, fetched from its JWKS (`jwks_uri`) and kept: what a
/// server checking ID tokens (`buckia serve s3 --web-identity`) reads them from.
///
/// The set is fetched on first use and again once it is ``maximumAge`` old. A token naming a
/// key id the set lacks asks for a fresh copy (an issuer publishes a new key before signing
/// with it), at most once per ``minimumRefreshInterval``, so a stream of tokens with made-up key
/// ids costs the issuer one request a minute. One fetch is in flight at a time; callers share
/// it. When a fetch fails the last good set is kept (its keys are still the issuer's) and no
/// fetch is tried again for ``minimumRefreshInterval``; only a verifier with no set at all fails.
public actor IssuerKeys: WebIdentityKeySource {
    /// Where the keys are.
    public nonisolated let url: URL
    /// How long a set is used before it is fetched again.
    public nonisolated let maximumAge: Duration
    /// The shortest time between two fetches asked for by unknown key ids.
    public nonisolated let minimumRefreshInterval: Duration
    private let http: HTTPClient
    private let clock: @Sendable () -> Date
    private var current: (keys: JSONWebKeySet, fetchedAt: Date)?
    /// When a fetch was last asked for by an unknown key id.
    private var lastRefresh: Date?
    /// When a fetch last failed: a stale set is not fetched again within the refresh interval.
    private var lastFailure: Date?
    private var fetching: Task<JSONWebKeySet, any Error>?
    /// How many fetches were sent: for tests that bound them.
    package private(set) var fetches = 0

    /// Keys at `url` (https, or http to this machine), fetched through `http`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a URL that is neither.
    public init(
        url: URL, http: HTTPClient = HTTPClient(), maximumAge: Duration = .seconds(3600), minimumRefreshInterval: Duration = .seconds(60),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        try OAuthSession.checkSecure(url)
        self.url = url
        self.http = http
        self.maximumAge = maximumAge
        self.minimumRefreshInterval = minimumRefreshInterval
        self.clock = clock
    }

    /// The keys of the issuer `issuer` names in its discovery document
    /// (`/.well-known/openid-configuration`, whose `issuer` must be `issuer` itself, as
    /// OpenID Connect Discovery §4.3 requires).
    public static func discover(
        issuer: URL, http: HTTPClient = HTTPClient(), clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> IssuerKeys {
        try OAuthSession.checkSecure(issuer)
        let document = issuer.appendingPathComponent(".well-known/openid-configuration")
        let response = try await http.send(HTTPRequest(.get, document))
        let object = try OAuthSession.Answer(status: response.status, data: response.data).object()
        guard let named = object["issuer"] as? String, named == issuer.absoluteString else {
            throw BuckiaError(
                .corrupt, "The discovery document at \(document.absoluteString) names another issuer than \(issuer.absoluteString); its keys are not that issuer's.")
        }
        guard let text = object["jwks_uri"] as? String, let keys = URL(string: text), keys.host != nil else {
            throw BuckiaError(.corrupt, "The discovery document at \(document.absoluteString) has no jwks_uri.")
        }
        return try IssuerKeys(url: keys, http: http, clock: clock)
    }

    public func keySet(refresh: Bool) async throws -> JSONWebKeySet {
        let now = clock()
        if let current {
            let stale = now.timeIntervalSince(current.fetchedAt) >= Double(maximumAge.components.seconds)
            let interval = Double(minimumRefreshInterval.components.seconds)
            if let lastFailure, now.timeIntervalSince(lastFailure) < interval { return current.keys }
            if !stale {
                guard refresh else { return current.keys }
                let recently = lastRefresh.map { now.timeIntervalSince($0) < interval } ?? false
                if recently { return current.keys }
                lastRefresh = now
            }
        }
        else if let lastFailure, now.timeIntervalSince(lastFailure) < Double(minimumRefreshInterval.components.seconds) {
            throw BuckiaError(
                .transient, "The issuer's keys at \(url.absoluteString) could not be fetched \(Int(now.timeIntervalSince(lastFailure))) s ago; the next try is at most once a minute.")
        }
        if let fetching { return try await fetching.value }
        fetches += 1
        let task = Task { try await self.fetch() }
        fetching = task
        defer { fetching = nil }
        do {
            let keys = try await task.value
            current = (keys, clock())
            lastFailure = nil
            return keys
        } catch {
            lastFailure = clock()
            if let current { return current.keys }
            throw error
        }
    }

    private func fetch() async throws -> JSONWebKeySet {
        var request = HTTPRequest(.get, url)
        request.headers.set("Accept", "application/jwk-set+json, application/json")
        request.maximumBodySize = Int64(JSONWebKeySet.maximumBytes)
        let response = try await http.send(request)
        return try JSONWebKeySet(json: response.data)
    }
}
