import BuckiaCore
import BuckiaSecurity
import Foundation

extension TokenManager {
    /// The secret-store context the pull zone's URL token key is read from by default.
    public static let bunnyTokenKeyContext = "bunny/token-key"

    /// The seed's `generateBunnyToken`: `url` (a file on a pull zone) signed with the zone's
    /// token key, which is read from the store under `keyContext`, valid for `expiry`, optionally
    /// bound to a client address and to countries.
    ///
    /// The seed also lists referrers; Bunny's token authentication has no referrer parameter
    /// (allowed referrers are a pull-zone setting), so there is none here.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/notFound`` when no key is saved under `keyContext`.
    public func generateBunnyToken(
        for url: URL, expiry: Duration, ip: String? = nil, countries: [String] = [], countriesBlocked: [String] = [],
        scheme: BunnyTokenScheme = .hmac, keyContext: String = TokenManager.bunnyTokenKeyContext, now: Date = Date()
    ) throws -> URL {
        guard let key = try getToken(for: keyContext) else {
            throw BuckiaError(
                .notFound, "No Bunny token key is saved under \(keyContext); save the pull zone's URL token key there first (TokenManager.saveToken).")
        }
        let expires = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + Double(expiry.components.seconds)).rounded(.down))
        return try BunnyTokenFactory(securityKey: key).sign(
            url, BunnySigningOptions(scheme: scheme, expires: expires, ip: ip, countries: countries, countriesBlocked: countriesBlocked))
    }
}
