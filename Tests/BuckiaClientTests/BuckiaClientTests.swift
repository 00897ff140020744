import Buckia
import BuckiaClient
import BuckiaTestSupport
import Foundation
import Testing

/// BuckiaClient over real providers: the local filesystem, and S3 at a port nothing listens
/// on as a primary that cannot be reached.
@Suite("BuckiaClient")
struct BuckiaClientTests {
    /// A local bucket in a fresh folder.
    static func local() throws -> (BuckiaConfiguration, URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        return (BuckiaConfiguration(provider: .local, bucketName: "local", options: ["root": root.path]), root)
    }

    /// An S3 bucket at 127.0.0.1:9, where nothing answers: one attempt, one-second connect.
    static let unreachable = BuckiaConfiguration(
        provider: .s3, bucketName: "nowhere", authConfig: .awsSignature(accessKeyId: "AKID", secretAccessKey: "secret"),
        options: ["endpoint": "http://127.0.0.1:9", "maxAttempts": "1", "connectTimeoutSeconds": "1"])

    @Test("Upload, list, download, public URL and delete go to the configured bucket")
    func operations() async throws {
        let (configuration, root) = try Self.local()
        defer { try? FileManager.default.removeItem(at: root) }
        let client = try await BuckiaClient(configuration: configuration, registry: .builtIn, environment: TestHome.processEnvironment)
        #expect(client.isUsingFallback == false)
        #expect(try await client.testConnection().isConnected)
        let source = root.deletingLastPathComponent().appendingPathComponent("buckia-client-src-\(UUID().uuidString).txt")
        try Data("hello, client\n".utf8).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }

        let stored = try await client.uploadFile(localURL: source, remotePath: "inbox/hello.txt")
        #expect(stored.size == 14)
        let named = try await client.uploadFile(localURL: source)
        #expect(named.path.rawValue == source.lastPathComponent, "no remote path: the file's own name")
        #expect(try await client.listFiles(path: "inbox").map(\.path.rawValue) == ["inbox/hello.txt"])
        #expect(try await client.listFiles().count == 2)

        let copy = source.appendingPathExtension("copy")
        defer { try? FileManager.default.removeItem(at: copy) }
        _ = try await client.downloadFile(remotePath: "inbox/hello.txt", localURL: copy)
        #expect(try Data(contentsOf: copy) == Data("hello, client\n".utf8))
        #expect(try client.getPublicURL(remotePath: "inbox/hello.txt").isFileURL)

        #expect(try await client.deleteFile(remotePath: "inbox/hello.txt") == true)
        #expect(try await client.deleteFile(remotePath: "inbox/hello.txt") == false, "nothing left to delete")
        #expect(try await client.listFiles(path: "inbox").isEmpty)
    }

    @Test("Without a fallback nothing is contacted at creation; the connection test says the bucket is unreachable")
    func noFallbackIsLazy() async throws {
        let client = try await BuckiaClient(configuration: Self.unreachable, registry: .builtIn, environment: TestHome.processEnvironment)
        #expect(client.isUsingFallback == false)
        let status = try await client.testConnection()
        #expect(status.isConnected == false)
    }

    @Test("An unreachable primary hands over to the fallback")
    func fallbackWhenPrimaryFails() async throws {
        let (fallback, root) = try Self.local()
        defer { try? FileManager.default.removeItem(at: root) }
        let client = try await BuckiaClient(configuration: Self.unreachable, fallback: fallback, registry: .builtIn, environment: TestHome.processEnvironment)
        #expect(client.isUsingFallback)
        #expect(client.configuration == fallback)
        #expect(try await client.testConnection().isConnected)
    }

    @Test("A reachable primary is kept even when a fallback is configured")
    func primaryPreferred() async throws {
        let (primary, root) = try Self.local()
        defer { try? FileManager.default.removeItem(at: root) }
        let client = try await BuckiaClient(configuration: primary, fallback: Self.unreachable, registry: .builtIn, environment: TestHome.processEnvironment)
        #expect(client.isUsingFallback == false)
        #expect(client.configuration == primary)
    }

    @Test("When neither bucket answers the error names both, and no secret")
    func neitherAnswers() async throws {
        var second = Self.unreachable
        second.bucketName = "also-nowhere"
        let error = await #expect(throws: BuckiaError.self) { try await BuckiaClient(configuration: Self.unreachable, fallback: second, registry: .builtIn, environment: TestHome.processEnvironment) }
        #expect(error?.code == .transient)
        #expect(error?.message.contains("\"nowhere\"") == true && error?.message.contains("\"also-nowhere\"") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("secret") == false)
    }

    @Test("An unknown provider type is a configuration error, also for the fallback")
    func unknownProvider() async throws {
        let (primary, root) = try Self.local()
        defer { try? FileManager.default.removeItem(at: root) }
        await #expect(throws: BuckiaError.self) { try await BuckiaClient(configuration: BuckiaConfiguration(provider: "ftp"), registry: .builtIn, environment: TestHome.processEnvironment) }
        // A bad fallback is reported even while the primary works.
        let error = await #expect(throws: BuckiaError.self) {
            try await BuckiaClient(configuration: primary, fallback: BuckiaConfiguration(provider: "ftp"), registry: .builtIn, environment: TestHome.processEnvironment)
        }
        #expect(error?.code == .invalidConfiguration)
    }
}
