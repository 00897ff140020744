import BuckiaB2
import BuckiaBunny
import BuckiaCore
@testable import BuckiaGateway
import BuckiaProviderKit
import BuckiaTestSupport
import Foundation
import Testing

/// Multipart uploads over B2 (the emulator in Tests/Emulators): each is one of B2's own large
/// files, so any gateway over the bucket serves it, as members of a fleet would.
@Suite("S3 gateway: multipart uploads kept as B2 large files")
struct GatewayB2UploadsTests {
    typealias Multipart = GatewayMultipartTests

    @Test("Two gateways over one B2 bucket: an upload started through one is one large file, given parts through both and completed through the other; a selection B2 cannot finish answers NotImplemented and leaves the upload whole; an abort cancels the large file")
    func acrossGateways() async throws {
        let emulator = try await B2Emulator.start(buckets: ["gateway"], minimumPartSize: 65_536)
        defer { emulator.stop() }
        let configuration = emulator.configuration(bucket: "gateway")
        let configure: (inout S3GatewayOptions) -> Void = { $0.minimumPartSize = 65_536 }
        // Every request goes on to B2 (several round trips to the emulator) from a test process
        // shared with the whole suite: the hang guard is long.
        let first = try GatewayHarness(provider: try B2Provider(configuration: configuration), configure: configure, answerTimeout: 300)
        let second = try GatewayHarness(provider: try B2Provider(configuration: configuration), configure: configure, answerTimeout: 300)
        defer { first.stop(); second.stop() }
        let backend = try B2Provider(configuration: configuration)
        try await first.createBucket("fleet")

        let path = "/fleet/big.bin"
        let id = try await Multipart.start(first, path)
        let parts = [Multipart.bytes(100_000, seed: 1), Multipart.bytes(70_000, seed: 2), Multipart.bytes(5_000, seed: 3)]
        var tags: [(Int, String)] = []
        for (index, data) in parts.enumerated() {
            let tag = try await Multipart.part(index % 2 == 0 ? second : first, path, id, index + 1, data)
            tags.append((index + 1, try #require(tag, "part \(index + 1)")))
        }
        #expect(try await backend.unfinishedUploads(prefix: "fleet/").map(\.key) == ["fleet/big.bin"], "the upload is B2's own large file")

        let partial = try await Multipart.complete(second, path, id, [tags[0], tags[2]])
        #expect(partial.0 == 501 && partial.1.contains("NotImplemented"), "\(partial)")
        let listing = String(decoding: try await first.send("GET", "\(path)?uploadId=\(id)").1, as: UTF8.self)
        #expect(listing.components(separatedBy: "<Part>").count - 1 == 3, "the refused completion kept every part: \(listing)")

        let done = try await Multipart.complete(second, path, id, tags)
        try #require(done.0 == 200, "\(done)")
        #expect(try await backend.readData(remotePath: ObjectKey("fleet/big.bin"), range: nil) == parts.reduce(Data(), +))
        #expect(try await backend.unfinishedUploads(prefix: "fleet/").isEmpty)
        let part = try await first.exchange("GET", "\(path)?partNumber=2")
        #expect(part.status == 206 && part.body == parts[1] && part.headers["x-amz-mp-parts-count"] == "3")

        let other = try await Multipart.start(first, "/fleet/gone.bin")
        #expect(try await Multipart.part(first, "/fleet/gone.bin", other, 1, parts[0]) != nil)
        let aborted = try await second.send("DELETE", "/fleet/gone.bin?uploadId=\(other)")
        #expect(aborted.0 == 204)
        #expect(try await backend.unfinishedUploads(prefix: "fleet/").isEmpty, "the abort cancelled the large file")
        #expect(try await first.send("GET", "/fleet/gone.bin?uploadId=\(other)").0 == 404)
    }
}

/// Multipart uploads over Bunny (the emulator), which has no parts of its own: each part is an
/// object under the gateway's reserved folder in the storage zone (``PartStagingProvider``),
/// so any gateway over the zone serves an upload another started.
@Suite("S3 gateway: multipart uploads kept as parts in a Bunny storage zone")
struct GatewayBunnyUploadsTests {
    typealias Multipart = GatewayMultipartTests

    /// The gateway's staged parts in the zone, by size.
    static func staged(_ backend: BunnyProvider) async throws -> [Int64] {
        var sizes: [Int64] = []
        for try await entry in backend.list(ListOptions(prefix: ".buckia-s3/staged/", recursive: true)) {
            if let file = entry.file, file.path.rawValue.contains("/parts/") { sizes.append(file.size) }
        }
        return sizes.sorted()
    }

    @Test("Two gateways over one Bunny zone: an upload started through one keeps its parts in the zone, takes parts through both, any selection completes through the other, and neither the completion nor an abort leaves a part behind")
    func acrossGateways() async throws {
        let emulator = try await BunnyEmulator.start()
        defer { emulator.stop() }
        let configure: (inout S3GatewayOptions) -> Void = { $0.minimumPartSize = 65_536 }
        let first = try GatewayHarness(provider: try BunnyProvider(configuration: emulator.configuration()), configure: configure, answerTimeout: 300)
        let second = try GatewayHarness(provider: try BunnyProvider(configuration: emulator.configuration()), configure: configure, answerTimeout: 300)
        defer { first.stop(); second.stop() }
        let backend = try BunnyProvider(configuration: emulator.configuration())
        try await first.createBucket("fleet")

        let path = "/fleet/big.bin"
        let id = try await Multipart.start(first, path)
        let parts = [Multipart.bytes(100_000, seed: 1), Multipart.bytes(70_000, seed: 2), Multipart.bytes(5_000, seed: 3)]
        var tags: [(Int, String)] = []
        for (index, data) in parts.enumerated() {
            let tag = try await Multipart.part(index % 2 == 0 ? second : first, path, id, index + 1, data)
            tags.append((index + 1, try #require(tag, "part \(index + 1)")))
        }
        // Part 2 sent again through the other gateway: the last one sent stays.
        let replacement = Multipart.bytes(80_000, seed: 4)
        tags[1] = (2, try #require(try await Multipart.part(second, path, id, 2, replacement)))
        #expect(try await Self.staged(backend) == [5_000, 80_000, 100_000], "the parts wait in the zone, part 2 once")
        let listing = String(decoding: try await first.send("GET", "\(path)?uploadId=\(id)").1, as: UTF8.self)
        #expect(listing.components(separatedBy: "<Part>").count - 1 == 3, "\(listing)")

        let done = try await Multipart.complete(second, path, id, [tags[0], tags[2]])
        try #require(done.0 == 200, "\(done)")
        #expect(try await backend.readData(remotePath: ObjectKey("fleet/big.bin"), range: nil) == parts[0] + parts[2])
        #expect(try await Self.staged(backend).isEmpty, "the completion removed the parts")
        let part = try await first.exchange("GET", "\(path)?partNumber=2")
        #expect(part.status == 206 && part.body == parts[2] && part.headers["x-amz-mp-parts-count"] == "2", "\(part.status) \(part.headers)")

        let other = try await Multipart.start(first, "/fleet/gone.bin")
        #expect(try await Multipart.part(first, "/fleet/gone.bin", other, 1, parts[0]) != nil)
        #expect(try await second.send("DELETE", "/fleet/gone.bin?uploadId=\(other)").0 == 204)
        #expect(try await Self.staged(backend).isEmpty, "the abort removed the part")
        #expect(try await first.send("GET", "/fleet/gone.bin?uploadId=\(other)").0 == 404)
    }
}
