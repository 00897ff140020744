import BuckiaCore
@testable import BuckiaHTTP
import Foundation
import Testing

/// A transport that could not start (libcurl's loop) fails every request with its reason; the
/// client used to switch to URLSession without a word.
@Suite("An HTTP transport that could not start")
struct UnavailableTransportTests {
    @Test("Every request fails at once with the reason, is not retried, and nothing is sent")
    func failsLoudly() async throws {
        let cause = BuckiaError(.io, "curl_multi_init failed", operation: "start libcurl")
        let sends = Locked(0)
        var configuration = HTTPClient.Configuration(retryPolicy: .standard)
        configuration.log = { line in if line.contains(" attempt ") { sends.withLock { $0 += 1 } } }
        let client = HTTPClient(configuration: configuration, transport: UnavailableTransport(failure: cause))
        let error = await #expect(throws: BuckiaError.self) {
            try await client.send(HTTPRequest(.get, try #require(URL(string: "http://127.0.0.1:9/x"))))
        }
        #expect(error?.code == .io)
        #expect(error?.message.contains("curl_multi_init failed") == true && error?.message.contains(".urlSession") == true)
        #expect(sends.withLock { $0 } == 1, "one attempt logged, no retry")
    }
}
