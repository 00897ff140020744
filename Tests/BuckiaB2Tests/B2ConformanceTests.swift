import BuckiaB2
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// The emulator every B2 test of this process shares (tests keep apart by prefix), with a
/// private and a public bucket and a small minimum part size, so multi-MiB files go up as
/// large files in several parts.
enum SharedB2 {
    static let emulator = Task { try await B2Emulator.start(buckets: ["buckia-private", "buckia-public:allPublic"], minimumPartSize: 65_536) }

    /// Options that make files of 2 MiB and more large files of 1 MiB parts.
    static let smallParts = ["largeFileThreshold": "2M", "partSize": "1M"]
}

@Suite("B2 provider conformance (emulator)")
struct B2ConformanceTests {
    /// Every provider scenario against the public bucket, built through the registry from its
    /// configuration (so a new instance is a new B2Provider on the same bucket).
    @Test("b2 provider", arguments: ProviderConformance.scenarios)
    func b2(_ scenario: ProviderScenario) async throws {
        let emulator = try await SharedB2.emulator.value
        var options = SharedB2.smallParts
        options["publicBucket"] = "true"
        options["downloadURL"] = emulator.endpoint.absoluteString
        let configuration = emulator.configuration(bucket: "buckia-public", options: options)
        try await scenario.check(.plugin(B2Provider.self, configuration: configuration, environment: [:]))
    }
}
