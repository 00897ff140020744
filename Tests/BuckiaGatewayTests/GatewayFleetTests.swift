import BuckiaCore
import BuckiaGateway
import BuckiaLocal
import BuckiaTestSupport
import Foundation
import Testing

/// Three `buckia serve s3` processes over one local folder, as a fleet behind a load balancer
/// would be: conditional writes hold whichever gateway answers, because each is the backend's
/// own atomic step (a link that does not replace; a replacement under the folder's lock), and
/// a bucket made through one is there for the others.
@Suite("S3 gateway: three gateway processes over one folder")
struct GatewayFleetTests {
    struct Fleet {
        let gateways: [GatewayProcess]
        let root: URL

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-fleet-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let capabilities = try LocalProvider(root: root).capabilities
            var started: [GatewayProcess] = []
            do {
                for _ in 0..<3 {
                    started.append(
                        try GatewayProcess(
                            remoteJSON: #"{"provider": "local", "bucketName": "served", "options": {"root": "\#(root.path)"}}"#, capabilities: capabilities))
                }
            } catch {
                for gateway in started { gateway.stop() }
                throw error
            }
            gateways = started
        }

        func stop() {
            for gateway in gateways { gateway.stop() }
            try? FileManager.default.removeItem(at: root)
        }
    }

    /// Sends `count` PUTs of `key` at once, writer `i` through gateway `i % 3` with body
    /// `writer i`, and returns each writer's status.
    static func race(_ fleet: Fleet, _ key: String, count: Int, headers: [String: String]) async throws -> [Int: Int] {
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for writer in 0..<count {
                group.addTask {
                    let gateway = fleet.gateways[writer % fleet.gateways.count]
                    return (writer, try await gateway.send("PUT", key, body: Data("writer \(writer)".utf8), headers: headers).0)
                }
            }
            var statuses: [Int: Int] = [:]
            for try await (writer, status) in group { statuses[writer] = status }
            return statuses
        }
    }

    @Test("2,000 creates with If-None-Match: * of 20 keys, 100 at once through three gateways: exactly one wins each key, and every gateway reads the winner's bytes")
    func creates() async throws {
        let fleet = try Fleet()
        defer { fleet.stop() }
        try await fleet.gateways[0].createBucket("race")
        for gateway in fleet.gateways.dropFirst() { #expect(try await gateway.send("HEAD", "/race").0 == 200, "a bucket made through another gateway") }
        for round in 0..<20 {
            let key = "/race/key-\(round)"
            let statuses = try await Self.race(fleet, key, count: 100, headers: ["If-None-Match": "*"])
            let winners = statuses.filter { $0.value == 200 }.map(\.key)
            #expect(winners.count == 1, "round \(round): \(winners.count) writers were told they created \(key)")
            #expect(statuses.values.allSatisfy { $0 == 200 || $0 == 412 }, "round \(round): \(Set(statuses.values).sorted())")
            guard let winner = winners.first else { continue }
            for gateway in fleet.gateways {
                #expect(try await gateway.send("GET", key).1 == Data("writer \(winner)".utf8), "round \(round): the stored bytes are the winner's")
            }
        }
    }

    @Test("If-Match on one version, 100 writers at once through three gateways, 10 rounds: exactly one replaces it each round")
    func replaces() async throws {
        let fleet = try Fleet()
        defer { fleet.stop() }
        try await fleet.gateways[1].createBucket("swap")
        #expect(try await fleet.gateways[2].send("PUT", "/swap/doc", body: Data("first".utf8)).0 == 200)
        for round in 0..<10 {
            let etag = try #require(try await fleet.gateways[round % 3].exchange("HEAD", "/swap/doc").headers["etag"])
            let statuses = try await Self.race(fleet, "/swap/doc", count: 100, headers: ["If-Match": etag])
            let winners = statuses.filter { $0.value == 200 }.map(\.key)
            #expect(winners.count == 1, "round \(round): \(winners.count) writers replaced the version \(etag)")
            #expect(statuses.values.allSatisfy { $0 == 200 || $0 == 412 }, "round \(round): \(Set(statuses.values).sorted())")
            if let winner = winners.first {
                #expect(try await fleet.gateways[(round + 1) % 3].send("GET", "/swap/doc").1 == Data("writer \(winner)".utf8))
            }
        }
    }
}
