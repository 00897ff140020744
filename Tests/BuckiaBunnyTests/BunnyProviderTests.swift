import BuckiaBunny
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaHTTP
import BuckiaLocal
import BuckiaSyncConformance
import BuckiaTestSupport
import Foundation
import Testing

/// The emulator the Bunny conformance runs share (scenarios keep apart by prefix).
enum SharedBunny {
    static let emulator = Task { try await BunnyEmulator.start() }
}

@Suite("Bunny provider conformance (emulator)")
struct BunnyConformanceTests {
    /// Every provider scenario, built through the registry from the configuration (a token key
    /// configured, so the token scenario runs too).
    @Test("bunny provider", arguments: ProviderConformance.scenarios)
    func bunny(_ scenario: ProviderScenario) async throws {
        let emulator = try await SharedBunny.emulator.value
        try await scenario.check(.plugin(BunnyProvider.self, configuration: emulator.configuration(tokenKey: "zone-token-key"), environment: [:]))
    }

    @Test("local folder ↔ bunny", arguments: SyncConformance.scenarios)
    func sync(_ scenario: SyncScenario) async throws {
        let emulator = try await SharedBunny.emulator.value
        let provider = BunnyProvider(settings: try BunnySettings.resolve(emulator.configuration(), environment: [:]))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-bunny-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await scenario.check(local: LocalProvider(root: folder), remote: provider)
    }
}

@Suite("Bunny provider against the emulator")
struct BunnyProviderTests {
    static func fresh(retryPolicy: RetryPolicy = RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5))) async throws -> (BunnyProvider, BunnyEmulator) {
        let emulator = try await BunnyEmulator.start()
        return (BunnyProvider(settings: try BunnySettings.resolve(emulator.configuration(), environment: [:]), retryPolicy: retryPolicy), emulator)
    }

    @Test("Deleting a key that names a directory leaves the directory and its files alone")
    func deleteNeverRemovesADirectory() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        try await provider.uploadData(Data("x".utf8), remotePath: "photos/2026/a.jpg")
        try await provider.uploadData(Data("y".utf8), remotePath: "photos/2026/b.jpg")
        try await provider.deleteFile(remotePath: "photos/2026")
        try await provider.deleteFile(remotePath: "photos")
        #expect(try await provider.listFiles(path: "photos").map(\.path.rawValue) == ["photos/2026/a.jpg", "photos/2026/b.jpg"])
        try await provider.deleteFile(remotePath: "photos/2026/a.jpg")
        #expect(try await provider.listFiles(path: "photos").map(\.path.rawValue) == ["photos/2026/b.jpg"])
    }

    @Test("An upload corrupted on the way is refused by its checksum and sent again, never stored damaged")
    func corruptedUploadRetried() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        let data = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try await emulator.setFaults(rate: 0.5, kinds: ["corrupt_upload"], seed: 4, calls: ["put"])
        for index in 0..<10 { try await provider.uploadData(data, remotePath: ObjectKey("c/\(index).bin"), options: UploadOptions()) }
        let stats = try await emulator.stats()
        try await emulator.setFaults(rate: 0, kinds: [])
        #expect(stats.checksum_rejections > 0 && stats.checksum_rejections == stats.faults["corrupt_upload"], "\(stats.faults)")
        for index in 0..<10 { #expect(try await provider.readData(remotePath: "c/\(index).bin") == data) }
        // Always corrupted: the upload fails with checksumMismatch and nothing is stored.
        try await emulator.setFaults(rate: 1, kinds: ["corrupt_upload"], calls: ["put"])
        let error = await #expect(throws: BuckiaError.self) { try await provider.uploadData(data, remotePath: "never.bin") }
        #expect(error?.code == .checksumMismatch)
        try await emulator.setFaults(rate: 0, kinds: [])
        #expect(try await provider.stat(remotePath: "never.bin") == nil)
    }

    @Test("A corrupted or truncated download never reaches the destination")
    func corruptedDownload() async throws {
        let (provider, emulator) = try await Self.fresh(retryPolicy: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1), maxDelay: .milliseconds(2)))
        defer { emulator.stop() }
        try await provider.uploadData(Data(repeating: 0x41, count: 50_000), remotePath: "d.bin")
        for kind in ["corrupt", "truncate"] {
            try await emulator.setFaults(rate: 1, kinds: [kind], calls: ["get"])
            let destination = TemporaryFile.makeURL()
            defer { try? FileManager.default.removeItem(at: destination) }
            try Data("before".utf8).write(to: destination)
            await #expect(throws: BuckiaError.self) { try await provider.downloadFile(remotePath: "d.bin", localURL: destination) }
            #expect(try Data(contentsOf: destination) == Data("before".utf8), "\(kind)")
        }
    }

    @Test("The read-only password reads and cannot write")
    func readOnlyPassword() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        try await provider.uploadData(Data("r".utf8), remotePath: "r.txt")
        let reader = BunnyProvider(settings: try BunnySettings.resolve(emulator.configuration(readOnly: true), environment: [:]))
        #expect(try await reader.readData(remotePath: "r.txt") == Data("r".utf8))
        let error = await #expect(throws: BuckiaError.self) { try await reader.uploadData(Data("w".utf8), remotePath: "w.txt") }
        #expect(error?.code == .unauthorized)
        #expect(!"\(String(describing: error))".contains(emulator.readOnlyPassword))
    }

    @Test("Regions choose the documented hosts; an unknown region is refused", arguments: [
        ("de", "storage.bunnycdn.com"), ("uk", "uk.storage.bunnycdn.com"), ("ny", "ny.storage.bunnycdn.com"), ("la", "la.storage.bunnycdn.com"),
        ("sg", "sg.storage.bunnycdn.com"), ("se", "se.storage.bunnycdn.com"), ("br", "br.storage.bunnycdn.com"), ("jh", "jh.storage.bunnycdn.com"),
        ("syd", "syd.storage.bunnycdn.com"),
    ])
    func regions(_ region: String, _ host: String) throws {
        let configuration = BuckiaConfiguration(
            provider: .bunny, bucketName: "zone", authConfig: .providerSpecific(type: .bunny, credentials: ["accessKey": "k"]), options: ["region": region])
        let settings = try BunnySettings.resolve(configuration, environment: [:])
        #expect(settings.endpoint.absoluteString == "https://\(host)")
        var wrong = configuration
        wrong.options = ["region": "mars"]
        #expect(throws: BuckiaError.self) { try BunnySettings.resolve(wrong, environment: [:]) }
    }

    @Test("Public URLs go through the pull zone, signed when a token key is configured, and validate")
    func publicURLs() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let base = BuckiaConfiguration(
            provider: .bunny, bucketName: "zone", authConfig: .providerSpecific(type: .bunny, credentials: ["accessKey": "k", "tokenKey": "tk"]),
            options: ["pullZoneURL": "https://media.b-cdn.net", "publicURLExpirySeconds": "600"])
        let provider = BunnyProvider(settings: try BunnySettings.resolve(base, environment: [:]), now: { now })
        let url = try provider.getPublicURL(remotePath: "a b/c.jpg")
        #expect(url.absoluteString.hasPrefix("https://media.b-cdn.net/a%20b/c.jpg?token=HS256-"))
        let token = try BunnyTokenFactory(securityKey: "tk").validate(url, now: now)
        #expect(token.expires == now.addingTimeInterval(600))
        #expect(throws: BunnyTokenRefusal.self) { try BunnyTokenFactory(securityKey: "tk").validate(url, now: now.addingTimeInterval(601)) }
    }
}
