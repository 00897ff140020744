import BuckiaCore
import BuckiaHTTP
import Foundation
import Testing

@Suite("HTTPClient errors")
struct HTTPClientErrorTests {
    private func client(_ configure: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
        var configuration = HTTPClient.Configuration(retryPolicy: .none)
        configure(&configuration)
        return HTTPClient(configuration: configuration, resources: .tests)
    }

    @Test(
        "Final statuses map to the matching error code",
        arguments: [
            (401, BuckiaError.Code.unauthorized), (403, .permissionDenied), (404, .notFound), (410, .notFound),
            (409, .conditionNotMatch), (412, .conditionNotMatch), (429, .rateLimited), (500, .transient),
            (503, .transient), (507, .transient), (400, .invalidConfiguration), (405, .unsupported),
            (501, .unsupported), (414, .invalidPath),
        ])
    func mapsStatuses(status: Int, code: BuckiaError.Code) async throws {
        try await withTestServer { server in
            let error = await #expect(throws: BuckiaError.self) {
                try await client().send(HTTPRequest(.get, try server.url("/status/\(status)?id=\(uniqueID())")))
            }
            #expect(error?.code == code)
            let failure = try #require(error?.cause as? HTTPFailure)
            #expect(failure.status == status)
            #expect(failure.method == "GET")
            #expect(failure.bodyText.contains("<Code>Status\(status)</Code>"))
            #expect(error?.description.contains("HTTP \(status)") == true)
        }
    }

    @Test("An accepted status is returned for the provider to interpret")
    func acceptedStatusIsReturned() async throws {
        try await withTestServer { server in
            let request = HTTPRequest(.get, try server.url("/notfound"), accepts: .successfulAnd([404]))
            let response = try await client().send(request)
            #expect(response.status == 404)
            #expect(String(decoding: response.data, as: UTF8.self).contains("NoSuchKey"))
            #expect(response.header("content-type") == "application/xml")
        }
    }

    @Test("A provider's mapping replaces the default one and keeps the raw facts")
    func providerMapping() async throws {
        try await withTestServer { server in
            let client = client { configuration in
                configuration.mapFailure = { failure in
                    guard failure.status == 400, failure.bodyText.contains("<Code>Status400</Code>") else { return nil }
                    return BuckiaError(.checksumMismatch, "The backend saw a different checksum.", cause: failure)
                }
            }
            let error = await #expect(throws: BuckiaError.self) {
                try await client.send(HTTPRequest(.put, try server.url("/status/400"), body: .data(Data("x".utf8))))
            }
            #expect(error?.code == .checksumMismatch, "\(error?.description ?? "")")
            #expect((error?.cause as? HTTPFailure)?.status == 400)
        }
    }

    @Test("Redirects are not followed")
    func redirectsAreNotFollowed() async throws {
        try await withTestServer { server in
            let response = try await client().send(HTTPRequest(.get, try server.url("/redirect"), accepts: .all))
            #expect(response.status == 302)
            #expect(response.header("location") == "/echo")
            let error = await #expect(throws: BuckiaError.self) {
                try await client().send(HTTPRequest(.get, try server.url("/redirect")))
            }
            #expect(error?.code == .invalidConfiguration)
        }
    }

    @Test("A request that outlasts its timeout fails as transient")
    func timeoutIsTransient() async throws {
        try await withTestServer { server in
            let id = uniqueID()
            let request = HTTPRequest(.get, try server.url("/slow?delay=120&id=\(id)"), timeout: .seconds(1))
            let error = await #expect(throws: BuckiaError.self) { try await client().send(request) }
            // The error came back before the server wrote any answer: the timeout ended it.
            #expect(try await server.count("\(id).answered") == 0)
            #expect(error?.code == .transient)
            #expect(error?.message.contains("timed out") == true)
            #expect((error?.cause as? HTTPTransportFailure)?.code == .timedOut)
        }
    }

    @Test("Cancelling the task cancels the request in flight", arguments: [false, true])
    func cancellationCancelsTheRequest(download: Bool) async throws {
        try await withTestServer { server in
            let client = client()
            let id = uniqueID()
            // The stall limit outlasts the server's wait, so only the cancel can end the request
            // early: with the default 60 s, a starved CI machine once timed it out first (transient).
            let request = HTTPRequest(.get, try server.url("/slow?delay=280&id=\(id)"), timeout: .seconds(290))
            let destination = TemporaryFile.makeURL()
            defer { try? FileManager.default.removeItem(at: destination) }
            let task = Task {
                download ? try await client.download(request, to: destination) : try await client.send(request)
            }
            // Cancel once the request is at the server (the server says when).
            #expect(try await server.awaitCount(id) == 1)
            task.cancel()
            let error = await #expect(throws: BuckiaError.self) { try await task.value }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            // Cancelled, not answered: the task ended before the server wrote its response.
            #expect(try await server.count("\(id).answered") == 0)
            #expect(!FileManager.default.fileExists(atPath: destination.path))
        }
    }

    @Test("Cancelling during a retry wait surfaces as cancelled")
    func cancellationDuringBackoff() async throws {
        try await withTestServer { server in
            // The retry wait ends only by cancellation (no clock involved), and says when it began.
            let waits = Locked<(began: Int, ranOut: Int)>((0, 0))
            let (began, signal) = AsyncStream.makeStream(of: Void.self)
            var policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(120), maxDelay: .seconds(120), random: { 1.0 })
            policy.sleep = { _ in
                waits.withLock { $0.began += 1 }
                signal.yield()
                let (never, keptOpen) = AsyncStream.makeStream(of: Void.self)
                for await _ in never {}  // ends when the task is cancelled
                keptOpen.finish()
                try Task.checkCancellation()
                waits.withLock { $0.ranOut += 1 }
            }
            let client = HTTPClient(configuration: .init(retryPolicy: policy), resources: .tests)
            let request = HTTPRequest(.get, try server.url("/status/503?id=\(uniqueID())"))
            let task = Task { try await client.send(request) }
            for await _ in began { break }
            #expect(waits.withLock { $0.began } == 1)
            task.cancel()
            let error = await #expect(throws: BuckiaError.self) { try await task.value }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(waits.withLock { $0.ranOut } == 0, "the retry wait ended by cancellation, not by running out")
        }
    }

    @Test("A task cancelled before sending sends nothing")
    func cancelledBeforeStart() async throws {
        try await withTestServer { server in
            let id = uniqueID()
            let url = try server.url("/status/200?id=\(id)")
            let client = client()
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await client.send(HTTPRequest(.get, url))
            }
            let error = await #expect(throws: BuckiaError.self) { try await task.value }
            #expect(error?.code == .cancelled)
            let count = try await server.count(id)
            #expect(count == 0)
        }
    }
}
