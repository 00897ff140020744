import BuckiaCore
import BuckiaSigV4
import Foundation

/// The `sigv4` target: a request's authorization as `buckia serve s3` reads it
/// (`SigV4Verifier.parse`), then checked (`SigV4Verifier.verify`) with a key the input cannot
/// know, at the request's own time so the canonical request is always built. The input is
/// the method, the target, then `name: value` header lines.
///
/// Its laws: a request nobody signed with the key never verifies; and the same method, target
/// and headers signed with the key by Buckia's own signer (`SigV4Signer.sign`, what its S3
/// client sends) always do, so the client and the gateway read every request alike.
enum SigV4Target {
    static let secret = Secret("buckia-fuzz-secret-access-key")
    static let date = Date(timeIntervalSince1970: 1_795_000_000)

    static func run(_ data: Data) throws -> String? {
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 2 else { return "no method and target" }
        let method = String(lines[0])
        let target = String(lines[1])
        let headers = lines.dropFirst(2).prefix(64).map { line -> (name: String, value: String) in
            guard let colon = line.firstIndex(of: ":") else { return (String(line), "") }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        try roundTrip(method: method, target: target, headers: headers)
        let request = SigV4Request(method: method, target: target, headers: headers)
        let authorization: SigV4Authorization
        do {
            authorization = try SigV4Verifier.parse(request)
        } catch {
            return "\(error)"
        }
        do {
            try SigV4Verifier.verify(request, authorization, secret: secret, now: authorization.date)
        } catch {
            return "\(error)"
        }
        throw FuzzFinding("a request verified though nobody signed it with the key: \(method) \(target.debugDescription)")
    }

    /// Signs the request as Buckia's S3 client would and checks the verifier accepts it, when
    /// it is one a client can send: a method of capital letters, a target from `/` that is a
    /// URL with no presigning parameter (`X-Amz-…`: such a request is signed in its query),
    /// header names that are tokens and values of visible ASCII and spaces.
    static func roundTrip(method: String, target: String, headers: [(name: String, value: String)]) throws {
        guard !method.isEmpty, method.utf8.allSatisfy({ (65...90).contains($0) }), target.hasPrefix("/"),
            target.range(of: "x-amz-", options: .caseInsensitive) == nil, let url = URL(string: "http://gateway.invalid" + target)
        else { return }
        let reserved: Set<String> = ["host", "authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"]
        var plain: [String: String] = [:]
        for (name, value) in headers {
            let lower = name.lowercased()
            guard !lower.isEmpty, !reserved.contains(lower), lower.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 }),
                value.utf8.allSatisfy({ (32...126).contains($0) })
            else { continue }
            plain[lower] = value
        }
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyId: "AKIDFUZZ", secretAccessKey: secret), region: "us-east-1", service: "s3")
        var sent = signer.sign(method: method, url: url, headers: plain, payloadHash: SigV4Signer.unsignedPayload, date: date).map { (name: $0.key, value: $0.value) }
        sent.append((name: "host", value: "gateway.invalid"))
        let request = SigV4Request(method: method, target: target, headers: sent)
        do {
            let authorization = try SigV4Verifier.parse(request)
            try SigV4Verifier.verify(request, authorization, secret: secret, now: date)
        } catch {
            throw FuzzFinding("the gateway refused what the client signed (\(error)): \(method) \(target.debugDescription) \(plain)")
        }
    }
}
