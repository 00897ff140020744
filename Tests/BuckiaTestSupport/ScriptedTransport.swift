import BuckiaCore
import BuckiaHTTP
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport that answers from a script, one entry per attempt, and records what it was sent.
/// It stands in for the network only where the client's own decisions are under test.
public final class ScriptedTransport: HTTPTransport {
    /// One attempt's answer.
    public enum Step: Sendable {
        case status(Int, body: String = "", headers: [String: String] = [:])
        case failure(URLError.Code)
    }

    private let steps: Locked<[Step]>
    /// Every request sent, in order.
    package let sent = Locked<[HTTPRequest]>([])

    /// A transport that answers with `steps`, then with 500s.
    public init(_ steps: [Step]) { self.steps = Locked(steps) }

    public func perform(_ request: HTTPRequest, destination: URL?, errorBodyLimit: Int) async throws -> HTTPTransportResult {
        sent.withLock { $0.append(request) }
        let step = steps.withLock { $0.isEmpty ? Step.status(500) : $0.removeFirst() }
        switch step {
        case .status(let status, let body, let extra):
            let body = Data(body.utf8)
            let headers = HTTPHeaders([("Content-Length", String(body.count))] + extra.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
            var digests: [HashAlgorithm: Digest] = [:]
            if (200...299).contains(status), request.method != .head, let check = request.bodyCheck {
                digests = try check.verify(body, headers: headers)  // as a transport must: before delivery
            }
            if let destination, (200...299).contains(status) {
                try body.write(to: destination)
                return HTTPTransportResult(status: status, headers: headers, body: .file(destination), bodyDigests: digests)
            }
            return HTTPTransportResult(status: status, headers: headers, body: .data(body), bodyDigests: digests)
        case .failure(let code):
            throw HTTPTransportError(code: code)
        }
    }
}

