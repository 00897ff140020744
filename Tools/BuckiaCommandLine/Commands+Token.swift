import Buckia
import Foundation

extension CLI {
    static let tokenCommand = Command(
        name: "token", summary: "Check a signed Bunny CDN URL: whether it is valid, and why not.",
        usage: "token verify URL [--remote NAME] [--ip ADDRESS] [--country CC] [--at UNIXTIME]", positionals: 2...2,
        options: [
            .value("remote", "Take the token key from this Bunny remote's credential tokenKey (else BUNNY_TOKEN_KEY)."),
            .value("ip", "The client address the request comes from (for an address-bound URL)."),
            .value("country", "The client's ISO country code, checked against the URL's country lists."),
            .value("at", "Check as at this UNIX time instead of now."),
        ],
        details: "Exit status 0 when the URL is valid, 1 when it is not (the reason is printed)."
    ) { invocation in
        guard invocation.positionals[0] == "verify" else {
            throw UsageError(description: "token has one subcommand: token verify URL")
        }
        guard let url = URL(string: invocation.positionals[1]), url.host != nil else {
            throw UsageError(description: "\(invocation.positionals[1].debugDescription) is not a URL.")
        }
        let key: Secret
        if let remote = invocation.arguments.value("remote") {
            let (provider, _) = try invocation.provider(named: remote.hasSuffix(":") ? String(remote.dropLast()) : remote)
            guard let bunny = provider as? BunnyProvider, let tokenKey = bunny.settings.tokenKey else {
                throw BuckiaError(.invalidConfiguration, "The remote \(remote) is not a Bunny remote with the credential tokenKey.", path: remote)
            }
            key = tokenKey
        } else if let text = invocation.environment["BUNNY_TOKEN_KEY"], !text.isEmpty {
            key = Secret(text)
        } else {
            throw BuckiaError(.invalidConfiguration, "No token key: give --remote NAME (a Bunny remote with the credential tokenKey) or set BUNNY_TOKEN_KEY.")
        }
        var now = Date()
        if let text = invocation.arguments.value("at") {
            guard let seconds = Int64(text) else { throw UsageError(description: "--at takes a UNIX time in seconds.") }
            now = Date(timeIntervalSince1970: Double(seconds))
        }
        do {
            let token = try BunnyTokenFactory(securityKey: key).validate(url, now: now, ip: invocation.arguments.value("ip"), country: invocation.arguments.value("country"))
            let left = Int64(saturating: token.expires.timeIntervalSince(now).rounded(.towardZero))
            var facts = ["\(token.scheme) token", "expires \(token.expires.formatted(.iso8601)) (in \(left) s)"]
            if let path = token.parameters["token_path"] { facts.append("opens \(path)*") }
            if let countries = token.parameters["token_countries"] { facts.append("countries \(countries)") }
            if let blocked = token.parameters["token_countries_blocked"] { facts.append("blocked \(blocked)") }
            if token.boundToIP { facts.append("bound to an address") }
            Console.out("valid: " + facts.joined(separator: ", "))
            return .success
        } catch let refusal as BunnyTokenRefusal {
            Console.out("invalid: \(refusal)")
            return .failure
        }
    }
}
