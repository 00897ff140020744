import BuckiaCore
import BuckiaGateway
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing

/// Clients that misbehave, against the gateway itself: each gets its error or is closed, nothing
/// of theirs is stored, and a well-behaved client is served right after.
@Suite("S3 gateway: bad clients")
struct GatewayBadClientTests {
    enum Bad: String, CaseIterable, Sendable, CustomStringConvertible {
        case requestLine1MB, headers10000, bodyShorter, bodyLonger, stopsMidBody, idle1000, signedOtherValue, signedMissingHeader
        case signedOtherRange
        /// An XML body whose processing instruction is named in bytes that are not UTF-8:
        /// Foundation's parser traps on it, and trapped the whole server (`Tools/fuzz/fuzz` found it).
        case xmlNotUTF8
        var description: String { rawValue }
    }

    /// A raw request signed with the harness's static key over `signed`, sent with `sent` instead.
    static func signedRequest(
        _ harness: GatewayHarness, method: String, target: String, body: Data, signed: [String: String], sent: [String: String]? = nil
    ) throws -> [UInt8] {
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyId: harness.accessKeyId, secretAccessKey: harness.secretAccessKey), region: "us-east-1", service: "s3")
        let url = try #require(URL(string: "http://127.0.0.1:\(harness.server.port)\(target)"))
        var headers = signer.sign(method: method, url: url, headers: signed, payloadHash: Hashing.sha256Hex(body), date: Date())
        if let sent {
            for name in signed.keys { headers.removeValue(forKey: name.lowercased()) }
            headers.merge(sent) { $1 }
        }
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(harness.server.port)\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n").utf8) + Array(body)
    }

    @Test("Each bad client gets its error or is closed, stores nothing, and the next client is served", arguments: Bad.allCases)
    func bad(_ bad: Bad) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("safe")
        #expect(try await harness.send("PUT", "/safe/kept.txt", body: Data("kept".utf8)).0 == 200)
        let port = harness.server.port
        let payload = Data(repeating: 0x5A, count: 4096)
        switch bad {
        case .requestLine1MB:
            let answer = try await offPool {
                let client = try RawClient(port: port)
                client.send("GET /safe/" + String(repeating: "a", count: 1 << 20) + " HTTP/1.1\r\nHost: x\r\n\r\n")
                return client.readAll()
            }
            #expect(answer.hasPrefix("HTTP/1.1 414") || answer.isEmpty, "\(answer.prefix(200))")
        case .headers10000:
            let answer = try await offPool {
                let client = try RawClient(port: port)
                client.send("GET /safe/kept.txt HTTP/1.1\r\nHost: x\r\n" + (0..<10_000).map { "X-H\($0): v\r\n" }.joined() + "\r\n")
                return client.readAll()
            }
            #expect(answer.hasPrefix("HTTP/1.1 431") || answer.isEmpty, "\(answer.prefix(200))")
        case .bodyShorter, .stopsMidBody:
            let wire = try Self.signedRequest(harness, method: "PUT", target: "/safe/short.bin", body: payload, signed: [:])
            let answer = try await offPool {
                let client = try RawClient(port: port)
                client.send(Array(wire.dropLast(1000)))
                if bad == .bodyShorter {
                    shutdown(client.descriptor, Int32(SHUT_WR))  // the end of what it sends
                    return client.readAll()
                }
                return ""  // closed at once, mid-body, when the client goes
            }
            #expect(answer.isEmpty || answer.hasPrefix("HTTP/1.1 400"), "\(answer.prefix(200))")
            // The server notices the end of the connection; the partial body is never stored.
            var rounds = 0
            while harness.server.busyConnectionCount > 0, rounds < 5000 { rounds += 1; usleep(1000) }
            #expect(try await harness.provider.stat(remotePath: ObjectKey("safe/short.bin")) == nil)
        case .bodyLonger:
            let wire = try Self.signedRequest(harness, method: "PUT", target: "/safe/long.bin", body: payload, signed: [:])
            let answer = try await offPool {
                let client = try RawClient(port: port)
                client.send(wire + Array("EXTRA BYTES THAT ARE NO REQUEST\r\n\r\n".utf8))
                return client.readAll()
            }
            // The declared body is the object; what follows is read as the next request and refused.
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(300))")
            #expect(answer.contains("HTTP/1.1 400"), "\(answer.prefix(600))")
            #expect(try await harness.provider.readData(remotePath: ObjectKey("safe/long.bin"), options: ReadOptions()) == payload)
        case .idle1000:
            let clients = try await offPool { try (0..<1000).map { _ in try RawClient(port: port) } }
            var rounds = 0
            while harness.server.connectionCount < HTTPServerLimits().maximumConnections, rounds < 10_000 { rounds += 1; usleep(1000) }
            // Served while a thousand connections sit idle, and the server holds no more than its limit.
            let (status, body) = try await harness.send("GET", "/safe/kept.txt")
            #expect(status == 200 && body == Data("kept".utf8))
            #expect(harness.server.connectionCount <= HTTPServerLimits().maximumConnections + 1)
            withExtendedLifetime(clients) {}
        case .xmlNotUTF8:
            let body = Data(Array("<?xml".utf8) + [0xDC] + Array(" version=\"1.0\"?><Delete><Object><Key>kept.txt</Key></Object></Delete>".utf8))
            let (status, answer) = try await harness.send("POST", "/safe?delete", body: body)
            #expect(status == 400, "\(String(decoding: answer, as: UTF8.self))")
            #expect(String(decoding: answer, as: UTF8.self).contains("<Code>MalformedXML</Code>"))
        case .signedOtherValue, .signedMissingHeader, .signedOtherRange:
            let (method, target, signed, sent): (String, String, [String: String], [String: String]) =
                switch bad {
                case .signedOtherValue: ("PUT", "/safe/meta.bin", ["x-amz-meta-owner": "alice"], ["x-amz-meta-owner": "mallory"])
                case .signedMissingHeader: ("PUT", "/safe/meta.bin", ["x-amz-meta-owner": "alice"], [:])
                default: ("GET", "/safe/kept.txt", ["range": "bytes=0-1"], ["range": "bytes=0-3"])
                }
            let wire = try Self.signedRequest(harness, method: method, target: target, body: method == "PUT" ? payload : Data(), signed: signed, sent: sent)
            let answer = try await offPool {
                let client = try RawClient(port: port)
                client.send(wire)
                return client.read(until: "</Error>")
            }
            #expect(answer.hasPrefix("HTTP/1.1 403"), "\(answer.prefix(300))")
            #expect(answer.contains("<Code>SignatureDoesNotMatch</Code>") || answer.contains("<Code>AccessDenied</Code>"), "\(answer.prefix(600))")
            #expect(try await harness.provider.stat(remotePath: ObjectKey("safe/meta.bin")) == nil)
        }
        // The next well-behaved client is served, and what was stored before is intact.
        let (status, body) = try await harness.send("GET", "/safe/kept.txt")
        #expect(status == 200 && body == Data("kept".utf8))
    }
}
