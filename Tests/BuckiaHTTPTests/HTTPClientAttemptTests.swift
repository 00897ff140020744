import BuckiaCore
import BuckiaHTTP
import Foundation
import BuckiaTestSupport
import Testing

@Suite("HTTPClient attempts: built afresh, retried after the provider's mapping")
struct HTTPClientAttemptTests {
    let url = URL(string: "https://storage.example/bucket/key")!

    func client(_ transport: ScriptedTransport, maxAttempts: Int = 4, mapFailure: (@Sendable (HTTPFailure) -> BuckiaError?)? = nil) -> HTTPClient {
        HTTPClient(configuration: .init(retryPolicy: SleepRecorder().policy(maxAttempts: maxAttempts), mapFailure: mapFailure), transport: transport)
    }

    @Test("Every attempt is built afresh and told why the previous one failed")
    func buildsEachAttempt() async throws {
        let transport = ScriptedTransport([.status(503), .failure(.networkConnectionLost), .status(200)])
        let seen = Locked<[(Int, String?)]>([])
        let response = try await client(transport).send(interpret: { $0 }) { attempt in
            seen.withLock { $0.append((attempt.number, attempt.previousError.map { "\($0.code)" })) }
            var request = HTTPRequest(.put, url)
            request.headers.set("X-Attempt", "\(attempt.number)")
            return request
        }
        #expect(response.status == 200)
        #expect(seen.withLock { $0.map(\.0) } == [1, 2, 3])
        #expect(seen.withLock { $0.map(\.1) } == [nil, "transient", "transient"])
        #expect(transport.sent.withLock { $0.map { $0.headers["X-Attempt"] } } == ["1", "2", "3"])
    }

    @Test("A status the provider maps to a retryable error is retried, even a 400")
    func retriesMappedStatus() async throws {
        let transport = ScriptedTransport([.status(400, body: "RequestTimeout"), .status(200)])
        let mapping: @Sendable (HTTPFailure) -> BuckiaError? = { failure in
            String(decoding: failure.body, as: UTF8.self) == "RequestTimeout" ? BuckiaError(.transient, "timed out", cause: failure) : nil
        }
        let response = try await client(transport, mapFailure: mapping).send(HTTPRequest(.put, url))
        #expect(response.status == 200)
        #expect(response.attempts == 2)
    }

    @Test("A status the provider maps to a permanent error is not retried, even a 503")
    func keepsMappedVerdict() async throws {
        let transport = ScriptedTransport([.status(503), .status(200)])
        let mapping: @Sendable (HTTPFailure) -> BuckiaError? = { BuckiaError(.unsupported, "not here", cause: $0) }
        let error = await #expect(throws: BuckiaError.self) { try await client(transport, mapFailure: mapping).send(HTTPRequest(.get, url)) }
        #expect(error?.code == .unsupported)
        #expect(transport.sent.withLock { $0.count } == 1)
    }

    @Test("An error found inside an accepted response is retried when it is retryable")
    func retriesInterpretedError() async throws {
        let transport = ScriptedTransport([.status(200, body: "<Error>"), .status(200, body: "done")])
        let body = try await client(transport).send(interpret: { response -> String in
            let text = String(decoding: response.data, as: UTF8.self)
            if text == "<Error>" { throw BuckiaError(.transient, "an error document inside a 200") }
            return text
        }) { _ in HTTPRequest(.post, url) }
        #expect(body == "done")
        #expect(transport.sent.withLock { $0.count } == 2)
    }

    @Test("A permanent error found inside an accepted response is thrown at once")
    func throwsPermanentInterpretedError() async throws {
        let transport = ScriptedTransport([.status(200, body: "<Error>"), .status(200)])
        let error = await #expect(throws: BuckiaError.self) {
            try await client(transport).send(interpret: { _ -> Int in throw BuckiaError(.corrupt, "unreadable") }) { _ in HTTPRequest(.get, url) }
        }
        #expect(error?.code == .corrupt)
        #expect(transport.sent.withLock { $0.count } == 1)
    }

    @Test("Retries stop after the policy's attempts, with the last error")
    func boundedAttempts() async throws {
        let transport = ScriptedTransport([.failure(.timedOut), .failure(.timedOut), .failure(.timedOut), .status(200)])
        let error = await #expect(throws: BuckiaError.self) { try await client(transport, maxAttempts: 3).send(HTTPRequest(.get, url)) }
        #expect(error?.code == .transient)
        #expect(transport.sent.withLock { $0.count } == 3)
    }
}
