import BuckiaCore
import BuckiaGateway
import BuckiaLocal
import BuckiaSecurity
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing


/// `buckia serve s3` as a user runs it: its access log (one JSON line per request, never a
/// secret, a signature or a token) and its stop on SIGTERM (a request in flight finishes and is
/// stored whole, an unfinished one stores nothing, the staging folder goes, exit 0).
@Suite("buckia serve s3: the command")
struct GatewayCommandTests {
    /// The head of a signed PUT of `payload` to `path` that asks for 100 Continue before its body.
    static func signedPutHead(_ server: GatewayProcess, path: String, payload: Data) throws -> [UInt8] {
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey), region: "us-east-1", service: "s3")
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)"))
        var text = "PUT \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nContent-Length: \(payload.count)\r\nExpect: 100-continue\r\n"
        for (name, value) in signer.sign(method: "PUT", url: url, headers: [:], payloadHash: Hashing.sha256Hex(payload), date: Date()) {
            text += "\(name): \(value)\r\n"
        }
        return Array((text + "\r\n").utf8)
    }

    static func localRemote() throws -> (String, URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-serve-root-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        return (#"{"provider": "local", "bucketName": "served", "options": {"root": "\#(root.path)"}}"#, root)
    }

    @Test("--json writes one JSON line per request, with no secret, signature or token in any of them")
    func accessLog() async throws {
        let (remote, root) = try Self.localRemote()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try GatewayProcess(remoteJSON: remote, capabilities: try LocalProvider(root: root).capabilities, arguments: ["--json"])
        defer { server.stop() }
        try await server.createBucket("logged")
        let credentials = AWSCredentials(accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey)
        #expect(try await server.send("PUT", "/logged/a.txt", body: Data("logged".utf8)).0 == 200)
        #expect(try await server.send("GET", "/logged/a.txt?response-content-type=text%2Fplain").0 == 200)
        // A presigned URL carries its signature (and a session token would ride along) in the query.
        let signer = SigV4Signer(credentials: credentials, region: "us-east-1", service: "s3")
        let presigned = try #require(URL(string: server.endpoint.absoluteString + "/logged/a.txt"))
        let url = try signer.presignedURL(method: "GET", url: presigned, expires: .seconds(300), date: Date())
        let parts = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        let target = parts.percentEncodedPath + "?" + (parts.percentEncodedQuery ?? "")
        #expect(try await RawHTTP.exchange(port: UInt16(server.port), method: "GET", target: target, headers: []).status == 200)
        #expect(try await server.send("GET", "/logged/missing.txt").0 == 404)
        let signature = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "X-Amz-Signature" }?.value)

        // The log is written as requests finish; wait for the five lines (CreateBucket and four more).
        var lines: [String] = []
        for _ in 0..<500 {
            lines = server.accessLog.split(separator: "\n").map(String.init)
            if lines.count >= 5 { break }
            usleep(10_000)
        }
        #expect(lines.count == 5, "\(lines)")
        let entries = try lines.map { try JSONDecoder.iso8601.decode(S3AccessLogEntry.self, from: Data($0.utf8)) }
        #expect(entries.map(\.operation) == ["CreateBucket", "PutObject", "GetObject", "GetObject", "GetObject"])
        #expect(entries.map(\.status) == [200, 200, 200, 200, 404])
        #expect(entries[4].errorCode == "NoSuchKey")
        #expect(entries.allSatisfy { $0.principal == server.accessKeyId })
        #expect(entries[2].resource == "/logged/a.txt", "no query string in the log")
        let all = server.accessLog
        for secret in [server.secretAccessKey.exposedValue, signature, "X-Amz-Signature", "X-Amz-Credential", "response-content-type"] {
            #expect(!all.contains(secret), "the access log holds \(secret.prefix(12))…")
        }
    }

    @Test("SIGTERM: the request in flight finishes and is stored whole, one left unfinished stores nothing, exit 0")
    func sigterm() async throws {
        let (remote, root) = try Self.localRemote()
        defer { try? FileManager.default.removeItem(at: root) }
        // Requests in flight get 300 s after the signal (a hang guard). With the default 10 s, a
        // full run on two cores can starve this test's client past it between the signal and the
        // rest of its body: the server cuts the request off, and its grace period ends the
        // process with 143 (Docs/Testing.md, "Time in tests").
        let server = try GatewayProcess(remoteJSON: remote, capabilities: try LocalProvider(root: root).capabilities, arguments: ["--stop-timeout", "300"])
        try await server.createBucket("stopping")
        let port = UInt16(server.port)
        let payload = Data(repeating: 0x42, count: 256 * 1024)
        func wire(_ key: String) throws -> [UInt8] { try Self.signedPutHead(server, path: "/stopping/\(key)", payload: payload) + Array(payload) }
        let whole = try wire("whole.bin")
        let cut = try wire("cut.bin")
        let process = server.process.pid
        // Every step with the sockets runs on one thread of its own, with no `await` between
        // them. The server gives a client 30 s between reads (its rule against slow clients);
        // a test task that waited for a thread of the cooperative pool, held by other tests,
        // resumed after that and found both connections closed (the cause of this test's
        // failures in about a third of full runs). The second client connects only just before
        // it sends its head, for the same reason.
        let (continued, stopping, answer) = try await offPool { () throws -> ([String], Bool, String) in
            let finishing = try RawClient(port: port, timeout: 120)
            var continued: [String] = []
            // Each sends its head and, once the server asks for the body (100 Continue: the
            // request is in its handler), half the body; then the server is told to stop.
            finishing.send(Array(whole.prefix(whole.count - payload.count)))
            continued.append(finishing.read(until: "100 Continue\r\n\r\n"))
            finishing.send(Array(whole.dropFirst(whole.count - payload.count).prefix(payload.count / 2)))
            let abandoned = try RawClient(port: port, timeout: 120)
            abandoned.send(Array(cut.prefix(cut.count - payload.count)))
            continued.append(abandoned.read(until: "100 Continue\r\n\r\n"))
            abandoned.send(Array(cut.dropFirst(cut.count - payload.count).prefix(payload.count / 2)))
            kill(process, SIGTERM)
            let stopping = server.waitForError("stopping the server")
            // One finishes its body after the signal; the other goes away.
            finishing.send(Array(whole.suffix(payload.count / 2)))
            shutdown(abandoned.descriptor, Int32(SHUT_RDWR))
            return (continued, stopping, finishing.readAll())
        }
        #expect(continued.count == 2 && continued.allSatisfy { $0.contains("100 Continue") }, "\(continued)")
        #expect(stopping, "the server did not say it is stopping")
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(300))")
        #expect(answer.contains("Connection: close"))
        // The other client went away mid-body; its request ended without storing anything, and
        // the server, with nothing left in flight, exits.
        let (status, errors) = server.waitForExit()
        #expect(status == 0, "\(errors)")
        #expect(errors.contains("stopped serving"))
        #expect(try Data(contentsOf: root.appendingPathComponent("stopping/whole.bin")) == payload)
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("stopping/cut.bin").path))
        // Nothing of Buckia's is left in the served folder.
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent(".buckia").path))
    }
}

extension GatewayCommandTests {
    @Test("--stop-timeout 0: a request in flight at SIGTERM is cut off, stores nothing, and the server says so and exits 0")
    func stopTimeoutCutsOff() async throws {
        let (remote, root) = try Self.localRemote()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try GatewayProcess(remoteJSON: remote, capabilities: try LocalProvider(root: root).capabilities, arguments: ["--stop-timeout", "0"])
        try await server.createBucket("cut")
        let port = UInt16(server.port)
        let payload = Data(repeating: 0x43, count: 64 * 1024)
        let wire = try Self.signedPutHead(server, path: "/cut/held.bin", payload: payload)
        let pid = server.process.pid
        let continued = try await offPool { () throws -> String in
            let client = try RawClient(port: port, timeout: 120)
            client.send(wire)
            let continued = client.read(until: "100 Continue\r\n\r\n")
            client.send(Array(payload.prefix(payload.count / 2)))
            // The request is in its handler, half its body read or on the way: stop the server
            // and keep the connection open until it has gone.
            kill(pid, SIGTERM)
            _ = server.process.wait(.seconds(400))
            return continued
        }
        #expect(continued.contains("100 Continue"), "\(continued)")
        let (status, errors) = server.waitForExit()
        #expect(status == 0, "\(errors)")
        #expect(errors.contains("requests still running after 0 s were cut off"), "\(errors)")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("cut/held.bin").path))
        // No file is left in the served folder but the bucket's record: the upload's relay was
        // removed before the process ended. Its writer was still at work then, so the empty
        // working folder stays for the next run to tidy, as after a kill.
        let left = FileManager.default.enumerator(atPath: root.path)?.allObjects.map { "\($0)" } ?? []
        #expect(Set(left).isSubset(of: ["cut", ".buckia", ".buckia/tmp", ".buckia-s3", ".buckia-s3/buckets", ".buckia-s3/buckets/cut"]), "\(left)")
    }

    @Test("--stop-timeout 0 with no request in flight: a plain stop, exit 0, nothing said to be cut off")
    func stopTimeoutIdle() async throws {
        let (remote, root) = try Self.localRemote()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try GatewayProcess(remoteJSON: remote, capabilities: try LocalProvider(root: root).capabilities, arguments: ["--stop-timeout", "0"])
        // A request answered: its connection may stay open, idle, when the signal comes.
        try await server.createBucket("idle")
        let (status, errors) = server.stop()
        #expect(status == 0, "\(errors)")
        #expect(errors.contains("stopped serving"), "\(errors)")
        #expect(!errors.contains("cut off"), "\(errors)")
    }
}

extension JSONDecoder {
    static var iso8601: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
