#if os(macOS) || os(Linux)
import Buckia
import BuckiaHTTP
import Foundation

/// `buckia-bench cancel-storm`: rounds of 16 transfers in flight (dropped, slow, non-HTTP and
/// plain answers) whose task group is cancelled after a random 1–40 ms. The shape that
/// deadlocked FoundationNetworking's URLSession (issue 9): `URLSessionTask.cancel` waits on the
/// session queue while that queue waits on the task. A run that ends printed `done`; one that
/// hangs is killed by whoever started it (`CancellationStormTests` allows 45 s).
enum CancelStorm {
    static func run(_ arguments: [String]) async -> Int32 {
        var base: URL?
        var kind = HTTPClient.TransportKind.libcurl
        var rounds = 60
        var index = 0
        while index + 1 < arguments.count {
            let value = arguments[index + 1]
            switch arguments[index] {
            case "--url": base = URL(string: value)
            case "--transport": kind = HTTPClient.TransportKind(rawValue: value) ?? kind
            case "--rounds": rounds = max(1, Int(value) ?? rounds)
            default: break
            }
            index += 2
        }
        guard let base else {
            FileHandle.standardError.write(Data("buckia-bench cancel-storm: --url http://127.0.0.1:PORT (the HTTP tests' server) is required\n".utf8))
            return 2
        }
        let client = HTTPClient(configuration: .init(maximumConnectionsPerHost: 16, retryPolicy: .none, transport: kind))
        var generator = SystemRandomNumberGenerator()
        for round in 0..<rounds {
            let task = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for slot in 0..<16 {
                        let path = ["drop?id=storm-\(round)-\(slot)", "slow?delay=1&id=storm-\(round)-\(slot)", "garbage", "echo"][slot % 4]
                        guard let url = URL(string: path, relativeTo: base) else { continue }
                        group.addTask { _ = try await client.send(HTTPRequest(.put, url, body: .data(Data(count: 3000)))) }
                    }
                    try await group.waitForAll()
                }
            }
            try? await Task.sleep(for: .milliseconds(Int.random(in: 1...40, using: &generator)))
            task.cancel()
            _ = try? await task.value
        }
        guard let echo = URL(string: "echo", relativeTo: base), (try? await client.send(HTTPRequest(.get, echo)))?.status == 200 else {
            print("the client failed after the storm")
            return 1
        }
        print("done: \(rounds) rounds over \(kind.rawValue)")
        return 0
    }
}
#endif
