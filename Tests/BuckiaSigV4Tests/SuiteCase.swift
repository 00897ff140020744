import BuckiaCore
import BuckiaSigV4
import Foundation

/// One case of AWS's SigV4 test suite (`Vectors/<name>/<name>.{req,creq,sts,authz,sreq}`),
/// with its `.req` turned into what the signer takes: a URL, headers and a payload hash.
struct SuiteCase: Sendable {
    let name: String
    let method: String
    /// The request target as the `.req` writes it: raw, possibly with spaces or UTF-8.
    let target: String
    /// Lowercased names; a repeated or folded header is one entry, its values joined with `,`.
    let headers: [String: String]
    let body: String
    /// The expected canonical request, string to sign and `Authorization` value.
    let creq: String
    let sts: String
    let authz: String

    /// The suite's fixed inputs: credentials, scope and 2015-08-30T12:36:00Z.
    static let signer = SigV4Signer(
        credentials: AWSCredentials(accessKeyId: "AKIDEXAMPLE", secretAccessKey: Secret("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")),
        region: "us-east-1", service: "service")
    static let date = Date(timeIntervalSince1970: 1_440_938_160)

    /// The folder of every case, as copied into the test bundle.
    static func vectorsFolder() throws -> URL {
        guard let url = Bundle.module.url(forResource: "Vectors", withExtension: nil) else {
            throw SuiteError("The Vectors folder is not in the test bundle.")
        }
        return url
    }

    /// Loads and parses the case called `name`.
    init(_ name: String) throws {
        let folder = try Self.vectorsFolder().appendingPathComponent(name)
        func read(_ ext: String) throws -> String {
            try String(contentsOf: folder.appendingPathComponent("\(name).\(ext)"), encoding: .utf8)
        }
        self.name = name
        creq = try read("creq")
        sts = try read("sts")
        authz = try read("authz")

        let lines = try read("req").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // The target may hold spaces ("GET /example space/ HTTP/1.1"): method to the first
        // space, version from the last.
        guard let requestLine = lines.first, let firstSpace = requestLine.firstIndex(of: " "),
              let version = requestLine.range(of: " HTTP/", options: .backwards), firstSpace < version.lowerBound
        else { throw SuiteError("\(name).req has no request line.") }
        method = String(requestLine[..<firstSpace])
        target = String(requestLine[requestLine.index(after: firstSpace)..<version.lowerBound])

        var order: [String] = []
        var values: [String: [String]] = [:]
        var index = 1
        while index < lines.count, !lines[index].isEmpty {
            let line = lines[index]
            index += 1
            if line.first == " " || line.first == "\t", let last = order.last {
                // An obsolete folded line: the suite signs it as one more value of the header.
                values[last, default: []].append(line)
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { throw SuiteError("\(name).req has a header without a colon.") }
            let key = line[..<colon].lowercased()
            if values[key] == nil { order.append(key) }
            values[key, default: []].append(String(line[line.index(after: colon)...]))
        }
        // One value goes to the signer as written, so its trimming is what is tested; a list
        // is joined the way an HTTP client folds repeated fields: each value without its
        // surrounding white space, separated by commas, in the order sent.
        headers = values.mapValues { list in
            list.count == 1 ? list[0] : list.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ",")
        }
        body = index < lines.count ? lines[(index + 1)...].joined(separator: "\n") : ""
    }

    /// The URL a real client sends: the raw target with whatever a URL cannot hold
    /// (spaces, UTF-8) percent-encoded, and `.`, `..` and `//` left for the signer.
    func url() throws -> URL {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard let path = parts[0].addingPercentEncoding(withAllowedCharacters: .urlPathAllowed),
              let query = parts.dropFirst().first.map({ $0.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) }) ?? "",
              let host = headers["host"],
              let url = URL(string: "https://\(host)\(path)\(parts.count > 1 ? "?" + query : "")")
        else { throw SuiteError("\(name): the target \(target) makes no URL.") }
        return url
    }

    /// SHA-256 of the body, hex.
    var payloadHash: String { Hashing.sha256Hex(Data(body.utf8)) }

    /// What the signer makes of this request: canonical request, string to sign, `Authorization`.
    func signed(with signer: SigV4Signer = SuiteCase.signer) throws -> (creq: String, sts: String, authz: String) {
        let canonical = signer.canonicalRequest(method: method, url: try url(), headers: headers, payloadHash: payloadHash)
        let stringToSign = signer.stringToSign(canonicalRequest: canonical.text, date: Self.date)
        let signature = signer.signature(stringToSign: stringToSign, date: Self.date)
        let authorization = "AWS4-HMAC-SHA256 Credential=\(signer.credentials.accessKeyId)/\(signer.scope(Self.date)), "
            + "SignedHeaders=\(canonical.signedHeaders), Signature=\(signature)"
        return (canonical.text, stringToSign, authorization)
    }
}

/// A fixture that cannot be read or parsed.
struct SuiteError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
