import Buckia
import Foundation

extension CLI {
    static let tokenCommand = Command(
        name: "token", summary: "Issue, inspect and verify Buckia user tokens; check signed Bunny CDN URLs.",
        usage: "token keygen --key-id K [--algorithm EdDSA|HS256] | issue --user ID --grant PERMS:PREFIX... [--expires 24h] [--key-id K] [--s3] | inspect TOKEN | verify TOKEN|URL | jwks",
        positionals: 1...2,
        options: [
            .value("key-id", "keygen, issue: the signing key's id (issue: the only saved key when left out)."),
            .value("algorithm", "keygen: EdDSA (Ed25519, the default; verifiers need only the public key) or HS256 (a shared secret)."),
            .value("user", "issue: the user id the token is for (its sub claim)."),
            .value("grant", "issue: PERMS:PREFIX, such as read,list:u1/ or write:u1/inbound/ (PREFIX * for the whole bucket); give it once per grant."),
            .value("expires", "issue: how long the token is valid: 90s, 15m, 24h, 30d or seconds (default 24h, at most 366d)."),
            .value("audience", "issue, verify: the audience (aud) the token names (default buckia)."),
            .flag("s3", "issue: temporary S3 credentials for buckia serve s3 instead, printed as credential_process JSON (at most 12h)."),
            .value("public-key", "verify: check with this JSON Web Key (text, or @FILE) instead of the saved keys."),
            .value("remote", "verify URL: take the token key from this Bunny remote's credential tokenKey (else BUNNY_TOKEN_KEY)."),
            .value("ip", "verify URL: the client address the request comes from (for an address-bound URL)."),
            .value("country", "verify URL: the client's ISO country code, checked against the URL's country lists."),
            .value("at", "verify: check as at this UNIX time instead of now."),
            .flag("json", "Print one JSON object (issue, inspect, verify)."),
        ],
        details: """
            Signing keys live in the secret store (secrets list shows them; see Docs/Security.md).
            keygen creates one and prints its public key as a JSON Web Key (HS256 keys have none
            to print). issue prints a JSON Web Token any JWT library can verify. inspect prints a
            token's header and claims without checking anything. verify checks a Buckia token with
            the saved keys (or --public-key), or a signed Bunny CDN URL: exit 0 when valid, 1 with
            the reason when not. jwks prints the public keys of every saved EdDSA key, for verifiers.
            """
    ) { invocation in
        let arguments = invocation.positionals
        let json = invocation.arguments.flag("json")
        let tokens = TokenManager(store: FileSecretStore.standard(environment: invocation.environment))
        func only(_ count: Int) throws {
            guard arguments.count == count else { throw UsageError(description: "token \(arguments[0]) takes \(count - 1) argument\(count == 2 ? "" : "s").") }
        }
        switch arguments[0] {
        case "keygen":
            try only(1)
            guard let keyId = invocation.arguments.value("key-id") else { throw UsageError(description: "token keygen needs --key-id ID.") }
            try UsageError.checking { try UserTokenKeyID.check(keyId) }
            let name = invocation.arguments.value("algorithm") ?? "EdDSA"
            guard let algorithm = UserTokenAlgorithm.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
                throw UsageError(description: "--algorithm is EdDSA or HS256, not \(name.debugDescription).")
            }
            let key = try tokens.createSigningKey(algorithm, keyId: keyId)
            if let jwk = try key.verificationKey().jwk {
                Console.out(jwk)
            } else {
                Console.out("HS256 key \(keyId) saved; it is a shared secret, so there is no public key to print.")
            }
            return .success
        case "issue":
            try only(1)
            guard let user = invocation.arguments.value("user") else { throw UsageError(description: "token issue needs --user ID.") }
            guard !user.isEmpty, !user.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw UsageError(description: "--user \(user.debugDescription) is not a user id; give a non-empty id without control characters.")
            }
            if let keyId = invocation.arguments.value("key-id") { try UsageError.checking { try UserTokenKeyID.check(keyId) } }
            let grants = try StorageGrants(invocation.arguments.all("grant").map(parseGrant))
            guard !grants.grants.isEmpty else { throw UsageError(description: "token issue needs at least one --grant PERMS:PREFIX.") }
            if invocation.arguments.flag("s3") {
                let lifetime = try parseDuration(invocation.arguments.value("expires") ?? "1h", maximum: 43_200)
                let keys = try GatewayKeys.stored(in: tokens, keyId: invocation.arguments.value("key-id"), create: true)
                Console.out(try keys.issue(userId: user, grants: grants, lifetime: lifetime).credentialProcessJSON())
                return .success
            }
            let lifetime = try parseDuration(invocation.arguments.value("expires") ?? "24h", maximum: 366 * 86_400)
            let issued = try tokens.generateUserStorageToken(
                userId: user, grants: grants, expiry: lifetime, keyId: invocation.arguments.value("key-id"),
                audience: invocation.arguments.value("audience") ?? "buckia")
            if json {
                try printJSON([
                    "token": issued.token.exposedValue, "kid": issued.keyId, "sub": issued.claims.subject, "jti": issued.claims.tokenId,
                    "expires": issued.claims.expiresAt.formatted(.iso8601),
                ])
            } else {
                Console.out(issued.token.exposedValue)
            }
            return .success
        case "inspect":
            try only(2)
            let (algorithm, keyId, claims): (String, String, UserTokenClaims)
            do {
                (algorithm, keyId, claims) = try UserTokenVerifier.inspect(arguments[1])
            } catch let refusal as UserTokenRefusal {
                Console.out("not a Buckia token: \(refusal.detail.terminalSafe)")
                return .failure
            }
            if json {
                try printJSON(claimsObject(claims, algorithm: algorithm, keyId: keyId, extra: ["verified": false]))
            } else {
                Console.out("NOT VERIFIED: inspect reads the token without checking its signature or times.")
                describe(claims, algorithm: algorithm, keyId: keyId)
            }
            return .success
        case "verify":
            try only(2)
            var now = Date()
            if let text = invocation.arguments.value("at") {
                guard let seconds = Int64(text) else { throw UsageError(description: "--at takes a UNIX time in seconds.") }
                now = Date(timeIntervalSince1970: Double(seconds))
            }
            if arguments[1].hasPrefix("http://") || arguments[1].hasPrefix("https://") {
                return try verifyBunnyURL(arguments[1], invocation: invocation, now: now)
            }
            let keys: [UserTokenVerificationKey]
            if let given = invocation.arguments.value("public-key") {
                let text = given.hasPrefix("@") ? try Self.readKeyFile(String(given.dropFirst())) : given
                keys = [try UsageError.checking { try UserTokenVerificationKey(jwk: text) }]
            } else {
                keys = try tokens.signingKeys().map { try $0.verificationKey() }
                guard !keys.isEmpty else {
                    throw BuckiaError(.invalidConfiguration, "No signing key is saved to verify with; give --public-key JWK, or create one with buckia token keygen.")
                }
            }
            let fixedNow = now
            let verifier = try UserTokenVerifier(keys: keys, audience: invocation.arguments.value("audience") ?? "buckia", clock: { fixedNow })
            do {
                let claims = try verifier.verify(arguments[1])
                let (algorithm, keyId, _) = try UserTokenVerifier.inspect(arguments[1])
                if json {
                    try printJSON(claimsObject(claims, algorithm: algorithm, keyId: keyId, extra: ["valid": true]))
                } else {
                    Console.out("valid: Buckia token for \(claims.subject.terminalSafe), expires \(claims.expiresAt.formatted(.iso8601))")
                    describe(claims, algorithm: algorithm, keyId: keyId)
                }
                return .success
            } catch let refusal as UserTokenRefusal {
                if json {
                    try printJSON(["valid": false, "reason": refusal.reason.rawValue, "detail": refusal.detail])
                } else {
                    Console.out("invalid (\(refusal.reason.rawValue)): \(refusal.detail.terminalSafe)")
                }
                return .failure
            }
        case "jwks":
            try only(1)
            let jwks = try tokens.signingKeys().compactMap { try $0.verificationKey().jwk }
            Console.out(#"{"keys":[\#(jwks.joined(separator: ","))]}"#)
            return .success
        default:
            throw UsageError(description: "token has the subcommands keygen, issue, inspect, verify and jwks; see buckia token --help.")
        }
    }

    /// The JSON Web Key in the file `--public-key @FILE` names: a regular file of at most 64 KiB
    /// of UTF-8 (``readSmallFile(_:shownAs:holding:maximumBytes:)``).
    static func readKeyFile(_ path: String) throws -> String {
        guard !path.isEmpty else { throw UsageError(description: "--public-key @ names no file; give @PATH of a JWK file, or the JWK itself.") }
        let data = try readSmallFile(path, shownAs: "--public-key @\(path)", holding: "a JWK file, or the JWK itself", maximumBytes: 65_536)
        guard let text = String(data: data, encoding: .utf8) else {
            throw UsageError(description: "--public-key @\(path) is not UTF-8 text; give a JWK file.")
        }
        return text
    }

    /// The bytes of the small file at `path` that an option names (`shown`): a regular file of
    /// 1 to `maximumBytes` bytes. A device or FIFO is refused at once, never read or waited on
    /// (exit 2); a missing file is `notFound` (exit 3); the words say what the file should hold.
    static func readSmallFile(_ path: String, shownAs shown: String, holding what: String, maximumBytes: Int) throws -> Data {
        let file: LocalFile
        do {
            file = try LocalFile.openForReading(URL(fileURLWithPath: path))
        } catch let error as BuckiaError where error.code == .notFound {
            throw BuckiaError(.notFound, "\(shown): there is no file there; give the path of \(what).", path: path)
        } catch let error as BuckiaError where error.code == .invalidPath {
            throw BuckiaError(.invalidPath, "\(shown): " + error.message, path: path)
        }
        defer { file.closeAfterReading() }
        let size = try file.status().size
        guard size > 0, size <= Int64(maximumBytes) else {
            throw UsageError(description: "\(shown) is \(size) bytes; it should be \(what), 1 to \(maximumBytes) bytes.")
        }
        return try file.read(count: Int(size), at: 0)
    }

    /// `read,list:u1/` → read and list on `u1/`; `read:*` → read on the whole bucket
    /// (``BuckiaSecurity/StorageGrant/init(parsing:)``); a refused grant is a usage error.
    static func parseGrant(_ text: String) throws -> StorageGrant {
        let grant: StorageGrant
        do {
            grant = try StorageGrant(parsing: text)
        } catch let error as BuckiaError where error.code == .invalidConfiguration {
            throw UsageError(description: "--grant: \(error.message)")
        }
        try StorageGrants([grant]).validate()
        return grant
    }

    private static func claimsObject(_ claims: UserTokenClaims, algorithm: String, keyId: String, extra: [String: Any]) -> [String: Any] {
        var object: [String: Any] = [
            "alg": algorithm, "kid": keyId, "sub": claims.subject, "aud": claims.audience, "jti": claims.tokenId,
            "iat": claims.issuedAt.formatted(.iso8601), "nbf": claims.notBefore.formatted(.iso8601), "exp": claims.expiresAt.formatted(.iso8601),
            "grants": claims.grants.grants.map { ["prefix": $0.prefix, "allow": $0.permissions.names] },
        ]
        if let issuer = claims.issuer { object["iss"] = issuer }
        return object.merging(extra) { $1 }
    }

    private static func describe(_ claims: UserTokenClaims, algorithm: String, keyId: String) {
        Console.out("  user     \(claims.subject.terminalSafe)")
        Console.out("  key      \(keyId.terminalSafe) (\(algorithm))")
        Console.out("  valid    \(claims.notBefore.formatted(.iso8601)) to \(claims.expiresAt.formatted(.iso8601))")
        Console.out("  audience \(claims.audience.joined(separator: ", ").terminalSafe)")
        for grant in claims.grants.grants {
            Console.out("  grant    \(grant.permissions.names.joined(separator: ",")) on \(grant.prefix.isEmpty ? "everything" : grant.prefix.terminalSafe)")
        }
    }

    private static func printJSON(_ object: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        Console.out(String(decoding: data, as: UTF8.self))
    }

    private static func verifyBunnyURL(_ text: String, invocation: Invocation, now: Date) throws -> ExitCode {
        // The text is not echoed: a signed URL is a bearer credential.
        guard let url = URL(string: text), url.host != nil else { throw UsageError(description: "The argument is not a URL Buckia can read.") }
        let key: Secret
        if let remote = invocation.arguments.value("remote") {
            let configuration = try invocation.remotes().configuration(named: remote.hasSuffix(":") ? String(remote.dropLast()) : remote)
            guard configuration.provider == .bunny, let tokenKey = try BunnySettings.resolve(configuration, environment: invocation.environment).tokenKey else {
                throw BuckiaError(.invalidConfiguration, "The remote \(remote) is not a Bunny remote with the credential tokenKey.", path: remote)
            }
            key = tokenKey
        } else if let text = invocation.environment["BUNNY_TOKEN_KEY"], !text.isEmpty {
            key = Secret(text)
        } else {
            throw BuckiaError(.invalidConfiguration, "No token key: give --remote NAME (a Bunny remote with the credential tokenKey) or set BUNNY_TOKEN_KEY.")
        }
        do {
            let token = try BunnyTokenFactory(securityKey: key).validate(url, now: now, ip: invocation.arguments.value("ip"), country: invocation.arguments.value("country"))
            let left = Int64(saturating: token.expires.timeIntervalSince(now).rounded(.towardZero))
            var facts = ["\(token.scheme) token", "expires \(token.expires.formatted(.iso8601)) (in \(left) s)"]
            if let path = token.parameters["token_path"] { facts.append("opens \(path)*") }
            if let countries = token.parameters["token_countries"] { facts.append("countries \(countries)") }
            if let blocked = token.parameters["token_countries_blocked"] { facts.append("blocked \(blocked)") }
            if token.boundToIP { facts.append("bound to an address") }
            Console.out("valid: " + facts.joined(separator: ", ").terminalSafe)
            return .success
        } catch let refusal as BunnyTokenRefusal {
            Console.out("invalid: \("\(refusal)".terminalSafe)")
            return .failure
        }
    }

    static let secretsCommand = Command(
        name: "secrets", summary: "List or delete what the secret store holds: names and dates, never values.",
        usage: "secrets list | delete CONTEXT", positionals: 1...2,
        options: [.flag("json", "Print one JSON object per secret.")],
        details: """
            The store is $XDG_CONFIG_HOME/buckia/secrets/secrets.json (mode 0600, folder 0700),
            encrypted with BUCKIA_SECRETS_KEY (32 bytes, base64) or BUCKIA_SECRETS_PASSPHRASE
            when either is set. Docs/Security.md describes it.
            """
    ) { invocation in
        let store = FileSecretStore.standard(environment: invocation.environment)
        let arguments = invocation.positionals
        switch (arguments[0], arguments.count) {
        case ("list", 1):
            for entry in try store.entries() {
                let expires = entry.expiresAt.map { $0.formatted(.iso8601) }
                if invocation.arguments.flag("json") {
                    var object: [String: Any] = ["context": entry.context, "saved": entry.savedAt.formatted(.iso8601)]
                    if let expires { object["expires"] = expires }
                    try printJSON(object)
                } else {
                    Console.out("\(entry.context.terminalSafe)  saved \(entry.savedAt.formatted(.iso8601))\(expires.map { "  expires \($0)" } ?? "")")
                }
            }
            return .success
        case ("delete", 2):
            try UsageError.checking { try SecretContext.check(arguments[1]) }
            guard try store.delete(arguments[1]) else {
                throw BuckiaError(
                    .notFound, "The secret store holds nothing under \(arguments[1].debugDescription); buckia secrets list names what it holds.",
                    path: arguments[1])
            }
            Console.out("deleted \(arguments[1].terminalSafe)")
            return .success
        case ("delete", _):
            throw UsageError(description: "secrets delete takes the CONTEXT to delete; buckia secrets list names them.")
        case ("list", _):
            throw UsageError(description: "secrets list takes no argument.")
        default:
            throw UsageError(description: "secrets has the subcommands list and delete CONTEXT.")
        }
    }
}
