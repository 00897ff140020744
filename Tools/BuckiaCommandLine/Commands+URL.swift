import Buckia
import Foundation

extension CLI {
    static let urlCommand = Command(
        name: "url", summary: "Print a time-limited URL that reads (or with --put, writes) one object.",
        usage: "url REMOTE:PATH [--expires DURATION] [--put] [--ip ADDRESS] [--countries CC,…] [--countries-blocked CC,…] [--token-path PATH] [--scheme hmac|advanced|basic] [--path-form]",
        positionals: 1...1,
        options: [
            .value("expires", "How long the URL works: 90s, 15m, 1h, 7d or seconds (default 1h; at most 7d)."),
            .flag("put", "Sign an upload (PUT) instead of a download (GET)."),
            .value("ip", "Bunny: bind the URL to this client address."),
            .value("countries", "Bunny: allow only these ISO country codes (comma-separated)."),
            .value("countries-blocked", "Bunny: refuse these ISO country codes (comma-separated)."),
            .value("token-path", "Bunny: open every file under this path prefix, not just this one."),
            .value("scheme", "Bunny: hmac (default), advanced or basic."),
            .flag("path-form", "Bunny: carry the token in the path (bcdn_token=…), for HLS playlists."),
        ],
        details: "Needs a provider with presigned URLs (s3), one that authorizes downloads (b2), or a Bunny remote with pullZoneURL and the credential tokenKey (a signed CDN URL). Anyone with the URL can use it until it expires."
    ) { invocation in
        guard case .remote(let name, let path) = Location(invocation.positionals[0]) else {
            throw UsageError(description: "url needs a remote path such as photos:2026/cat.jpg")
        }
        let expires = try parseDuration(invocation.arguments.value("expires") ?? "1h")
        // The remote first, then the key: a missing remote is the error a user sees first.
        let configuration = try invocation.remotes().configuration(named: name)
        let method: PresignedMethod = invocation.arguments.flag("put") ? .put : .get
        let key = try ObjectKey(path.trimmedSlashes)
        let cdnOptions = ["ip", "countries", "countries-blocked", "token-path", "scheme"].filter { invocation.arguments.value($0) != nil }
            + (invocation.arguments.flag("path-form") ? ["path-form"] : [])
        // Chosen by the remote's provider type, as the registry chooses: a Bunny CDN URL is
        // signed from the configuration alone, with no provider made and nothing sent.
        if configuration.provider == .bunny {
            let bunny = try BunnySettings.resolve(configuration, environment: invocation.environment)
            guard method == .get else { throw UsageError(description: "A Bunny CDN URL reads; --put does not apply.") }
            let list = { (option: String) in (invocation.arguments.value(option) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
            var scheme = bunny.tokenScheme
            if let text = invocation.arguments.value("scheme") {
                guard let chosen = BunnyTokenScheme(rawValue: text) else { throw UsageError(description: "--scheme is hmac, advanced or basic.") }
                scheme = chosen
            }
            let options = BunnySigningOptions(
                scheme: scheme, expires: Date().addingTimeInterval(Double(expires.components.seconds)), ip: invocation.arguments.value("ip"),
                countries: list("countries"), countriesBlocked: list("countries-blocked"), tokenPath: invocation.arguments.value("token-path"),
                pathForm: invocation.arguments.flag("path-form"))
            Console.out(try bunny.signedURL(for: key, options).absoluteString)
            return .success
        }
        guard cdnOptions.isEmpty else {
            throw UsageError(description: "--\(cdnOptions[0]) signs Bunny CDN URLs; \(name): is not a Bunny remote.")
        }
        let (provider, _) = try invocation.provider(named: name)
        if method == .get, !provider.capabilities.supports(.presign), provider.capabilities.supports(.authorizedURL) {
            Console.out(try await provider.authorizedURL(for: key, expires: expires).absoluteString)
            return .success
        }
        Console.out(try provider.presignedURL(for: key, method: method, expires: expires).absoluteString)
        return .success
    }

    /// Parses `90`, `90s`, `15m`, `1h` or `7d` for `--option`, up to `maximum` seconds.
    static func parseDuration(_ text: String, option: String = "expires", allowsZero: Bool = false, maximum: Int64? = 7 * 86_400) throws -> Duration {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(text)
        var multiplier: Int64 = 1
        if let last = text.last, let unit = units[last] {
            digits = digits.dropLast()
            multiplier = unit
        }
        guard let number = Int64(digits), number > 0 || (allowsZero && number == 0) else {
            throw UsageError(description: "--\(option) takes a duration such as 90s, 15m, 1h or 7d; \(text.debugDescription) is not one.")
        }
        let (seconds, overflow) = number.multipliedReportingOverflow(by: multiplier)
        if let maximum, overflow || seconds > maximum {
            // In the largest unit that holds it whole: 12h, not 0d.
            var shown = "\(maximum)s"
            for (size, unit) in [(Int64(86_400), "d"), (3600, "h"), (60, "m")] where maximum % size == 0 {
                shown = "\(maximum / size)\(unit)"
                break
            }
            throw UsageError(description: "--\(option) is at most \(shown) (\(maximum) seconds); \(text.debugDescription) is longer.")
        }
        guard !overflow else {
            throw UsageError(description: "--\(option) \(text.debugDescription) is too long a duration.")
        }
        return .seconds(seconds)
    }
}
