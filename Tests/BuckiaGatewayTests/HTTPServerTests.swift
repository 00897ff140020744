import BuckiaCore
import Foundation
import Testing

@testable import BuckiaGateway

#if canImport(Glibc)
import Glibc
#endif

/// Echoes what it read: the method, the target and the body's length and bytes.
struct EchoHandler: HTTPServerHandler {
    let seen = Locked<[String]>([])

    func respond(to request: HTTPServerRequest, body: HTTPRequestBody) throws -> HTTPServerResponse {
        var received = Data()
        while let chunk = try body.read(upTo: 4096) { received += chunk }
        seen.withLock { $0.append("\(request.method) \(request.target) \(received.count)") }
        if request.target == "/stream" {
            return HTTPServerResponse(status: 200, body: .stream(length: nil) { writer in
                for index in 0..<3 { try writer.write(Data("part \(index);".utf8)) }
            })
        }
        return HTTPServerResponse(status: 200, headers: [("X-Length", String(received.count))], body: .data(received))
    }
}

/// A blocking client on a raw socket, to send exactly the bytes a test needs.
final class RawClient: @unchecked Sendable {
    let descriptor: Int32

    /// Connects; a read waits at most `timeout` seconds for bytes.
    init(port: UInt16, timeout: Int = 20) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw BuckiaError.posix(errno, operation: "connect", path: nil) }
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// Sends `text`; false when the server has closed the connection.
    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let sent = Glibc.send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                // Interrupted by a signal (another test's child exiting): again. A socket with a
                // timeout is never restarted by the kernel, whatever SA_RESTART says.
                if sent < 0 && errno == EINTR { continue }
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    /// Everything until the peer closes (or 20 s pass), as bytes.
    func readAllData() -> Data {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            data += chunk[0..<count]
        }
        return data
    }

    /// Everything until the peer closes (or 20 s pass).
    func readAll() -> String { String(decoding: readAllData(), as: UTF8.self) }

    /// Reads until `text` has arrived in full (or the peer closes).
    func read(until text: String) -> String {
        var data = Data()
        var byte = [UInt8](repeating: 0, count: 1)
        while !String(decoding: data, as: UTF8.self).contains(text) {
            let count = recv(descriptor, &byte, 1, 0)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else { break }
            data.append(byte[0])
        }
        return String(decoding: data, as: UTF8.self)
    }
}

@Suite("The gateway's HTTP/1.1 server", .serialized)
struct HTTPServerTests {
    @Test("Two requests on one kept-alive connection, a Content-Length body and a chunked one, and a chunked response")
    func keepAlive() throws {
        let handler = EchoHandler()
        let server = try HTTPServer(handler: handler)
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        client.send("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        let first = client.read(until: "hello")
        #expect(first.hasPrefix("HTTP/1.1 200 OK\r\n") && first.contains("X-Length: 5\r\n"))
        client.send("PUT /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nx-amz-checksum-crc32: AAAAAA==\r\n\r\n")
        #expect(client.read(until: "abcdefg").contains("X-Length: 7\r\n"))
        client.send("GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let streamed = client.readAll()
        #expect(streamed.contains("Transfer-Encoding: chunked\r\n"))
        #expect(streamed.hasSuffix("7\r\npart 0;\r\n7\r\npart 1;\r\n7\r\npart 2;\r\n0\r\n\r\n"))
        #expect(handler.seen.withLock { $0 } == ["PUT /a 5", "PUT /b 7", "GET /stream 0"])
    }

    @Test("Expect: 100-continue is answered when the handler reads the body, and not before")
    func expectContinue() throws {
        let server = try HTTPServer(handler: EchoHandler())
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        client.send("PUT /c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n") == "HTTP/1.1 100 Continue\r\n\r\n")
        client.send("xyz")
        #expect(client.read(until: "xyz").contains("200 OK"))
    }

    /// Requests no server may accept, and the status each gets.
    static let badRequests: [(String, String, Int)] = [
        ("a 1 MB request line", "GET /" + String(repeating: "a", count: 1 << 20) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414),
        ("10,000 headers", "GET / HTTP/1.1\r\nHost: x\r\n" + String(repeating: "X-A: b\r\n", count: 10_000) + "\r\n", 431),
        ("200 short headers", "GET / HTTP/1.1\r\nHost: x\r\n" + String(repeating: "A: b\r\n", count: 200) + "\r\n", 431),
        ("Content-Length and Transfer-Encoding", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("two Content-Lengths", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
        ("a negative Content-Length", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        ("gzip transfer coding", "PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        ("a folded header", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n", 400),
        ("no Host", "GET / HTTP/1.1\r\n\r\n", 400),
        ("HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 400),
        ("a space in the target", "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("a bad chunk size", "PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        ("a control character in a value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\u{1}c\r\n\r\n", 400),
    ]

    @Test("Bad requests get their status and the connection closes; the server keeps serving others", arguments: 0..<13)
    func badRequest(_ index: Int) throws {
        let (name, text, status) = Self.badRequests[index]
        let server = try HTTPServer(handler: EchoHandler())
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        client.send(text)
        let answer = client.readAll()
        // A server may close while a huge request is still arriving; the client then sees a reset, not the answer.
        #expect(answer.hasPrefix("HTTP/1.1 \(status) ") || (answer.isEmpty && status == 414), "\(name): \(answer.prefix(80))")
        let other = try RawClient(port: server.port)
        other.send("GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(other.readAll().hasPrefix("HTTP/1.1 200 OK"))
    }

    @Test("A body shorter than its Content-Length fails the request when the client stops; the server serves the next client")
    func shortBody() throws {
        let handler = EchoHandler()
        let server = try HTTPServer(handler: handler)
        defer { server.stop() }
        do {
            let client = try RawClient(port: server.port)
            client.send("PUT /short HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly ten b")
            shutdown(client.descriptor, Int32(SHUT_WR))
            #expect(client.readAll().hasPrefix("HTTP/1.1 400 "))
        }
        let next = try RawClient(port: server.port)
        next.send("GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(next.readAll().hasPrefix("HTTP/1.1 200 OK"))
        #expect(!handler.seen.withLock { $0 }.contains { $0.hasPrefix("PUT /short") })
    }

    @Test("A body longer than its Content-Length: the extra bytes are the next request, and a bad one is refused")
    func longBody() throws {
        let server = try HTTPServer(handler: EchoHandler())
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        client.send("PUT /long HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcdefgh\r\n\r\n")
        let answer = client.readAll()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK") && answer.contains("X-Length: 3\r\n"))
        #expect(answer.contains("HTTP/1.1 400 "))
    }

    @Test("Past the limit, with every connection inside a request, a newcomer gets 503; closing them frees room")
    func connectionLimit() throws {
        var limits = HTTPServerLimits()
        limits.maximumConnections = 16
        let server = try HTTPServer(limits: limits, handler: EchoHandler())
        defer { server.stop() }
        // Each holds a request open: its body is promised and not yet sent.
        var busy = try (0..<16).map { _ in try RawClient(port: server.port) }
        for client in busy { client.send("PUT /held HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc") }
        var rounds = 0
        while server.busyConnectionCount < 16, rounds < 10_000 { rounds += 1; usleep(1000) }
        #expect(server.busyConnectionCount == 16)
        let refused = try RawClient(port: server.port)
        #expect(refused.readAll().hasPrefix("HTTP/1.1 503 "))
        busy.removeAll()
        rounds = 0
        while server.connectionCount > 0, rounds < 10_000 { rounds += 1; usleep(1000) }
        let admitted = try RawClient(port: server.port)
        admitted.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(admitted.readAll().hasPrefix("HTTP/1.1 200 OK"))
    }

    @Test("Idle connections cannot shut others out: past the limit the one idle the longest is closed to make room")
    func idleEviction() throws {
        var limits = HTTPServerLimits()
        limits.maximumConnections = 16
        let server = try HTTPServer(limits: limits, handler: EchoHandler())
        defer { server.stop() }
        let idle = try (0..<16).map { _ in try RawClient(port: server.port) }
        var rounds = 0
        while server.connectionCount < 16, rounds < 10_000 { rounds += 1; usleep(1000) }
        // Forty more clients, each served in turn although sixteen idle ones came first.
        for index in 0..<40 {
            let client = try RawClient(port: server.port)
            client.send("GET /\(index) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(client.readAll().hasPrefix("HTTP/1.1 200 OK"), "client \(index)")
        }
        // The first idle connection was closed to make room (it reads the end), and the server
        // never held more than its limit and the one leaving.
        var byte: UInt8 = 0
        #expect(recv(idle[0].descriptor, &byte, 1, Int32(MSG_DONTWAIT)) == 0, "the oldest idle connection is still open")
        #expect(server.connectionCount <= 17)
    }

    @Test("stop() lets a request in flight finish with Connection: close, closes idle connections, and refuses new ones")
    func gracefulStop() throws {
        let server = try HTTPServer(handler: EchoHandler())
        let idle = try RawClient(port: server.port)
        let busy = try RawClient(port: server.port)
        busy.send("PUT /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nabc")
        // Both accepted, and the busy one inside its request (its head read) before stop() begins.
        var rounds = 0
        while server.connectionCount < 2 || server.busyConnectionCount < 1, rounds < 10_000 { rounds += 1; usleep(1000) }
        let stopped = Locked(false)
        let thread = Thread { stopped.withLock { $0 = server.stop(timeout: .seconds(20)) } }
        thread.start()
        // The rest of the body arrives after stop() began: the request still completes.
        rounds = 0
        while server.connectionCount == 2, rounds < 10_000 { rounds += 1; usleep(1000) }
        busy.send("def")
        let answer = busy.readAll()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK") && answer.contains("Connection: close\r\n") && answer.hasSuffix("abcdef"))
        #expect(idle.readAll().isEmpty)
        rounds = 0
        while !stopped.withLock({ $0 }), rounds < 20_000 { rounds += 1; usleep(1000) }
        #expect(stopped.withLock { $0 })
        #expect(throws: BuckiaError.self) { try RawClient(port: server.port) }
    }

    @Test("A field name is accepted exactly when each byte is one of RFC 9110's token characters")
    func tokenBytes() {
        let tokens = Set(Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&'*+-.^_`|~".utf8))
        for byte in UInt8.min...UInt8.max {
            let wire = Array("GET / HTTP/1.1\r\nHost: h\r\n".utf8) + [byte] + Array(": v\r\n\r\n".utf8)
            let accepted = HTTPServer.parse(wire).first == .request(method: "GET", target: "/", headerCount: 2, bodyBytes: 0)
            #expect(accepted == tokens.contains(byte), "byte \(byte)")
        }
    }

    @Test("Field names are compared without regard to ASCII case, and only ASCII letters fold", arguments: [
        ("Host", "host", true), ("X-Amz-Date", "x-amz-date", true), ("HOST", "HOST", true), ("host", "hosts", false),
        ("@", "`", false), ("[", "{", false), ("É", "é", false), ("", "", true), ("a", "b", false),
    ])
    func fieldNamesFoldASCIICase(_ one: String, _ other: String, _ same: Bool) {
        #expect(one.equalsIgnoringASCIICase(other) == same && other.equalsIgnoringASCIICase(one) == same)
        let request = HTTPServerRequest(method: "GET", target: "/", version: "HTTP/1.1", headers: [(one, "1"), ("Other", "2")])
        #expect(request.values(other) == (same ? ["1"] : []) || other == "Other")
    }

    @Test("The parser over bytes reads pipelined requests whole and stops at the first refusal", arguments: [
        ("GET /a HTTP/1.1\r\nHost: h\r\n\r\nPUT /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET /c HTTP/1.0\r\n\r\n",
         [HTTPParseOutcome.request(method: "GET", target: "/a", headerCount: 1, bodyBytes: 0), .request(method: "PUT", target: "/b", headerCount: 2, bodyBytes: 3),
          .request(method: "GET", target: "/c", headerCount: 0, bodyBytes: 0)]),
        ("PUT /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: v\r\n\r\n",
         [.request(method: "PUT", target: "/b", headerCount: 2, bodyBytes: 5)]),
        ("PUT /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n",
         [.refused(status: 400, reason: "a chunk size is not hexadecimal")]),
        ("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
         [.request(method: "GET", target: "/a", headerCount: 1, bodyBytes: 0), .refused(status: 400, reason: "an HTTP/1.1 request needs exactly one Host header")]),
        ("PUT /b HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc", [.refused(status: 400, reason: "the client stopped 7 bytes before the end of the body")]),
    ] as [(String, [HTTPParseOutcome])])
    func parseOverBytes(_ wire: String, _ expected: [HTTPParseOutcome]) {
        #expect(HTTPServer.parse(Array(wire.utf8)) == expected)
    }
}
