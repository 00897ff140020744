import Buckia
import BuckiaHTTP
import Foundation

/// `serve s3 --web-identity FILE`: which OpenID Connect issuer the gateway's STS trusts, and the
/// grants its logins get.
///
/// ```json
/// {
///   "issuer": "https://login.example.com/oauth2/default",
///   "audiences": ["buckia-app"],
///   "grants": ["read,list:home/${sub}/", "write:home/${sub}/inbound/", "deliver:home/*/inbound/"],
///   "jwks": "https://login.example.com/oauth2/default/v1/keys",
///   "roleArn": "arn:aws:iam::000000000000:role/buckia-user",
///   "maxDurationSeconds": 3600,
///   "leewaySeconds": 60
/// }
/// ```
///
/// `jwks` is a URL or a file path; without it the keys are found through the issuer's discovery
/// document. `roleArn`, `maxDurationSeconds` (900 to 43200, default 3600) and `leewaySeconds`
/// (0 to 300, default 60) are optional. Any other member is refused, so a misspelt one never
/// silently loosens the policy.
enum WebIdentityFile {
    static let members: Set<String> = ["issuer", "audiences", "grants", "jwks", "roleArn", "maxDurationSeconds", "leewaySeconds"]

    static func load(_ path: String, http: HTTPClient) async throws -> WebIdentityPolicy {
        func bad(_ reason: String) -> UsageError { UsageError(description: "--web-identity \(path): \(reason).") }
        let data = try CLI.readSmallFile(path, shownAs: "--web-identity \(path)", holding: "a web identity policy (JSON)", maximumBytes: 256 << 10)
        let parsed: Any
        do {
            try JSONValidation.validate(data, maximumDepth: 3)
            parsed = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw bad("it is not JSON")
        }
        guard JSONDuplicateKeys.first(in: Array(data)) == nil, let object = parsed as? [String: Any] else {
            throw bad("it is not one JSON object without a member twice")
        }
        if let unknown = Set(object.keys).subtracting(members).sorted().first {
            throw bad("\(unknown.debugDescription) is not a member it reads (\(members.sorted().joined(separator: ", ")))")
        }
        guard let issuer = object["issuer"] as? String, let issuerURL = URL(string: issuer), issuerURL.host != nil else {
            throw bad("issuer must be the issuer's URL, exactly as its tokens name it (iss)")
        }
        guard let audiences = object["audiences"] as? [String], !audiences.isEmpty else {
            throw bad("audiences must list the client ids whose tokens are accepted")
        }
        guard let grantTexts = object["grants"] as? [String], !grantTexts.isEmpty else {
            throw bad("grants must list what each login may do, such as \"read,list:home/${sub}/\"")
        }
        let template: GrantTemplate
        do {
            template = try GrantTemplate(parsing: grantTexts)
        } catch let error as BuckiaError {
            throw bad(error.message)
        }
        func seconds(_ name: String, default value: Int, _ range: ClosedRange<Int>) throws -> Duration {
            guard let given = object[name] else { return .seconds(value) }
            guard let number = given as? Int, range.contains(number) else { throw bad("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)") }
            return .seconds(number)
        }
        let keys: any WebIdentityKeySource
        switch object["jwks"] {
        case nil:
            keys = try await IssuerKeys.discover(issuer: issuerURL, http: http)
        case let text as String where text.hasPrefix("https://") || text.hasPrefix("http://"):
            guard let url = URL(string: text) else { throw bad("jwks \(text.debugDescription) is not a URL") }
            keys = try IssuerKeys(url: url, http: http)
        case let text as String where !text.isEmpty:
            let set = try CLI.readSmallFile(text, shownAs: "--web-identity \(path): jwks \(text)", holding: "the issuer's JSON Web Key Set", maximumBytes: JSONWebKeySet.maximumBytes)
            keys = StaticWebIdentityKeys(try JSONWebKeySet(json: set))
        default:
            throw bad("jwks must be a URL or a file path")
        }
        let roleArn: String?
        switch object["roleArn"] {
        case nil: roleArn = nil
        case let text as String where !text.isEmpty: roleArn = text
        default: throw bad("roleArn must be a non-empty string")
        }
        do {
            let verifier = try WebIdentityVerifier(
                issuer: issuer, audiences: Set(audiences), keys: keys, leeway: try seconds("leewaySeconds", default: 60, 0...300))
            return try WebIdentityPolicy(
                verifier: verifier, grants: template, roleArn: roleArn, maximumDuration: try seconds("maxDurationSeconds", default: 3600, 900...43_200))
        } catch let error as BuckiaError where error.code == .invalidConfiguration {
            throw bad(error.message)
        }
    }
}
