import BuckiaCore
import BuckiaHTTP
import Foundation
import Testing

@Suite("HTTPClient retries")
struct HTTPClientRetryTests {
    @Test("Transient statuses are retried until the server answers 200", arguments: [503, 429, 500, 502, 504, 408])
    func retriesTransientStatuses(status: Int) async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy(maxAttempts: 4)), resources: .tests)
            let id = uniqueID()
            let response = try await client.send(HTTPRequest(.get, try server.url("/status/\(status)?id=\(id)&fail=2")))
            #expect(response.status == 200)
            #expect(response.attempts == 3)
            let count = try await server.count(id)
            #expect(count == 3)
            // Full jitter at its top: 100 ms, then 200 ms.
            #expect(sleeps.recorded == [.milliseconds(100), .milliseconds(200)])
        }
    }

    @Test(
        "Retry-After is honoured in both of its forms",
        arguments: [
            ("3", Duration.seconds(3)),
            ("0", Duration.zero),
            ("Sun, 06 Nov 1994 08:49:44 GMT", Duration.seconds(7)),
        ])
    func honoursRetryAfter(header: String, expected: Duration) async throws {
        try await withTestServer { server in
            // The injected clock reads 08:49:37, so the HTTP-date is seven seconds ahead.
            let now = Date(timeIntervalSince1970: 784_111_777)
            let sleeps = SleepRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy(now: now)), resources: .tests)
            let id = uniqueID()
            let value = header.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? header
            let response = try await client.send(
                HTTPRequest(.get, try server.url("/status/429?id=\(id)&fail=1&retry_after=\(value)")))
            #expect(response.status == 200)
            #expect(sleeps.recorded == [expected])
        }
    }

    @Test("Statuses that will not change are never retried", arguments: [400, 401, 403, 404, 409, 412, 501])
    func doesNotRetryPermanentFailures(status: Int) async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy()), resources: .tests)
            let id = uniqueID()
            await #expect(throws: BuckiaError.self) {
                try await client.send(HTTPRequest(.get, try server.url("/status/\(status)?id=\(id)")))
            }
            let count = try await server.count(id)
            #expect(count == 1)
            #expect(sleeps.recorded.isEmpty)
        }
    }

    @Test(
        "Retries stop at maxAttempts and the error has the status's code",
        arguments: [
            (503, BuckiaError.Code.transient), (500, .transient), (504, .transient), (429, .rateLimited),
        ])
    func stopsAtMaxAttempts(status: Int, code: BuckiaError.Code) async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy(maxAttempts: 3)), resources: .tests)
            let id = uniqueID()
            let error = await #expect(throws: BuckiaError.self) {
                try await client.send(HTTPRequest(.get, try server.url("/status/\(status)?id=\(id)")))
            }
            #expect(error?.code == code)
            #expect((error?.cause as? HTTPFailure)?.attempts == 3)
            let count = try await server.count(id)
            #expect(count == 3)
            #expect(sleeps.recorded.count == 2)
        }
    }

    @Test("A Retry-After beyond the limit ends the retries and travels in the error")
    func longRetryAfterEndsRetries() async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy(maxRetryAfter: .seconds(60))), resources: .tests)
            let id = uniqueID()
            let error = await #expect(throws: BuckiaError.self) {
                try await client.send(HTTPRequest(.get, try server.url("/status/429?id=\(id)&retry_after=120")))
            }
            #expect(error?.code == .rateLimited)
            #expect(error?.retryAfter == .seconds(120))
            let count = try await server.count(id)
            #expect(count == 1)
            #expect(sleeps.recorded.isEmpty)
        }
    }

    @Test("A connection closed without a response is retried")
    func retriesDroppedConnections() async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            // A private transport: on a connection kept alive from another test, libcurl's
            // transport would resend once on a new connection by itself (not an attempt).
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy(), transport: .privateForTests))
            let id = uniqueID()
            let response = try await client.send(HTTPRequest(.get, try server.url("/drop?id=\(id)&fail=1")))
            #expect(response.status == 200)
            #expect(response.attempts == 2)
        }
    }

    @Test("A body cut short is retried, and says so when every attempt is")
    func retriesTruncatedBodies() async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy(maxAttempts: 3)), resources: .tests)
            let once = try await client.send(HTTPRequest(.get, try server.url("/truncate?id=\(uniqueID())&fail=1")))
            #expect(once.status == 200 && once.attempts == 2)
            let error = await #expect(throws: BuckiaError.self) {
                try await client.send(HTTPRequest(.get, try server.url("/truncate?id=\(uniqueID())")))
            }
            #expect(error?.code == .transient)
            // URLSession reports the cut as an unknown error ("broke off"), libcurl as a lost connection.
            let message = error?.message ?? ""
            #expect((message.contains("broke off") || message.contains("lost its connection")) && !message.contains("URLError"), "\(message)")
            #expect(error?.message.contains("3 attempts") == true, "\(error?.message ?? "")")
        }
    }

    // The server, not the test, stalls: the transport's stall timer (libcurl's low-speed
    // limit, URLSession's idle timeout) decides, so this test takes about one timeout (1 s);
    // what it asserts is the outcome, not the time.
    @Test("A download stalled mid-body is abandoned after the stall timeout and retried", arguments: HTTPClient.TransportKind.privateKinds)
    func stalledTransferIsRetried(_ kind: HTTPClient.TransportKind) async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            let lines = Locked<[String]>([])
            let client = HTTPClient(
                configuration: .init(
                    timeout: .seconds(1), retryPolicy: sleeps.policy(maxAttempts: 3), log: { line in lines.withLock { $0.append(line) } },
                    transport: kind))
            let response = try await client.send(HTTPRequest(.get, try server.url("/stall?id=\(uniqueID())&fail=1&stall=8")))
            #expect(response.status == 200 && response.data.count == 2000)
            #expect(response.attempts == 2)
            // Abandoned as stalled, not ended by the server closing the connection 8 s later.
            let retry = lines.withLock { $0 }.first { $0.contains("retrying") } ?? ""
            #expect(retry.contains("timed out"), "\(retry)")
        }
    }

    @Test("A server that accepts and never answers fails as timed out after the stall timeout, not minutes", arguments: HTTPClient.TransportKind.privateKinds)
    func silentServerTimesOut(_ kind: HTTPClient.TransportKind) async throws {
        try await withTestServer { server in
            let client = HTTPClient(configuration: .init(timeout: .seconds(1), retryPolicy: .none, transport: kind))
            let error = await #expect(throws: BuckiaError.self) {
                try await client.send(HTTPRequest(.get, try server.url("/silent?stall=8")))
            }
            #expect(error?.code == .transient)
            #expect((error?.cause as? HTTPTransportFailure)?.code == .timedOut)
        }
    }

    @Test("Cancelling the task abandons a transfer in flight as cancelled", arguments: HTTPClient.TransportKind.privateKinds)
    func cancellationAbandonsTransfer(_ kind: HTTPClient.TransportKind) async throws {
        try await withTestServer { server in
            let client = HTTPClient(configuration: .init(timeout: .seconds(30), retryPolicy: .none, transport: kind))
            let url = try server.url("/silent?stall=8")
            let task = Task { try await client.send(HTTPRequest(.get, url)) }
            // Cancelled whenever it is: before the request goes out or while it waits, the
            // outcome must be `cancelled`, long before the server's eight seconds.
            task.cancel()
            let error = await #expect(throws: BuckiaError.self) { try await task.value }
            #expect(error?.code == .cancelled, "\(error?.description ?? "")")
        }
    }

    @Test("A reply in another protocol is retried as a fault on the way, and the error names the endpoint, not an unsupported URL")
    func nonHTTPReply() async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy(maxAttempts: 3)), resources: .tests)
            let error = await #expect(throws: BuckiaError.self) {
                try await client.send(HTTPRequest(.get, try server.url("/garbage")))
            }
            #expect(error?.code == .transient)
            #expect(sleeps.recorded.count == 2, "retried twice")
            #expect(error?.message.contains("not HTTP (3 attempts)") == true && error?.message.contains("unsupported") == false, "\(error?.message ?? "")")
        }
    }

    @Test("A refused connection is transient and retried up to the limit")
    func refusedConnectionIsTransient() async throws {
        let server = try await TestServer.start()
        let url = try server.url("/echo")
        server.stop()
        let sleeps = SleepRecorder()
        let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy(maxAttempts: 3)), resources: .tests)
        let error = await #expect(throws: BuckiaError.self) {
            try await client.send(HTTPRequest(.get, url))
        }
        #expect(error?.code == .transient)
        #expect((error?.cause as? HTTPTransportFailure)?.code == .cannotConnectToHost)
        #expect(sleeps.recorded.count == 2)
    }

    @Test("A request's own policy overrides the client's")
    func perRequestPolicy() async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy()), resources: .tests)
            let id = uniqueID()
            let request = HTTPRequest(.post, try server.url("/status/503?id=\(id)"), retryPolicy: RetryPolicy.none)
            await #expect(throws: BuckiaError.self) { try await client.send(request) }
            let count = try await server.count(id)
            #expect(count == 1)
        }
    }

    @Test("Log lines report each attempt, each retry with its delay, and the final status")
    func logsRetries() async throws {
        try await withTestServer { server in
            let sleeps = SleepRecorder()
            let log = LogRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: sleeps.policy(), log: log.hook), resources: .tests)
            let id = uniqueID()
            _ = try await client.send(HTTPRequest(.get, try server.url("/status/503?id=\(id)&fail=1")))
            let lines = log.recorded
            #expect(lines.count == 4)
            #expect(lines.contains { $0.contains("attempt 1/4") })
            #expect(lines.contains { $0.contains("-> 503; retrying in 0.100s (attempt 2/4)") })
            #expect(lines.last?.contains("-> 200") == true)
        }
    }
}
