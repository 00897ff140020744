import Buckia
import BuckiaTestSupport
import Foundation
import Testing

/// `SyncEndpoint.bucket` chooses by the configuration's provider type, never by the provider's
/// class: a layer around a local provider must not change what the endpoint is.
@Suite("SyncEndpoint.bucket")
struct SyncEndpointTests {
    /// A layer that forwards everything, as a logging or retry layer would.
    struct Layer: ForwardingStorageProvider {
        let base: any StorageProvider
    }

    @Test("A local remote wrapped in a layer is still named by its root, so its overlap with the same folder is refused")
    func wrappedLocalOverlaps() throws {
        let root = try TestFolder.make("buckia-endpoint")
        defer { TestFolder.remove(root) }
        let configuration = BuckiaConfiguration(provider: .local, bucketName: "photos", options: ["root": root.path])
        let wrapped = Layer(base: try LocalProvider(configuration: configuration))
        let remote = try SyncEndpoint.bucket(wrapped, configuration: configuration, path: "2026/")
        #expect(remote.identity == "local:\(root.path)/2026/")
        let folder = try SyncEndpoint.localFolder(root, create: false)
        #expect(throws: BuckiaError.self) { try folder.requireApart(from: remote) }
    }

    @Test("The endpoint serves through the provider it was given: a read-only layer around a local remote refuses the sync's writes")
    func layerSeesTheWrites() async throws {
        let root = try TestFolder.make("buckia-endpoint")
        defer { TestFolder.remove(root) }
        let configuration = BuckiaConfiguration(provider: .local, bucketName: "photos", options: ["root": root.path])
        let remote = try SyncEndpoint.bucket(ReadOnlyLayer(try LocalProvider(configuration: configuration)), configuration: configuration)
        let error = await #expect(throws: BuckiaError.self) {
            try await remote.provider.uploadData(Data("x".utf8), remotePath: try ObjectKey("x.txt"), options: UploadOptions())
        }
        #expect(error?.code == .permissionDenied)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).isEmpty, "nothing reached the folder")
    }

    @Test("A local remote's own options stand: one configured without metadata keeps none through sync")
    func localOptionsStand() throws {
        let root = try TestFolder.make("buckia-endpoint")
        defer { TestFolder.remove(root) }
        let configuration = BuckiaConfiguration(provider: .local, bucketName: "plain", options: ["root": root.path, "metadata": "false"])
        let remote = try SyncEndpoint.bucket(try LocalProvider(configuration: configuration), configuration: configuration)
        #expect(!remote.provider.capabilities.supports(.userMetadata))
        #expect(remote.identity == "local:\(root.path)")
    }

    @Test("A local remote is named by its folder as its provider resolves it (links followed), and naming it creates nothing")
    func namedAsResolved() throws {
        let folder = try TestFolder.make("buckia-endpoint")
        defer { TestFolder.remove(folder) }
        let real = folder.appendingPathComponent("real", isDirectory: true)
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        let link = folder.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let linked = BuckiaConfiguration(provider: .local, bucketName: "l", options: ["root": link.path])
        let provider = try LocalProvider(configuration: linked)
        #expect(try SyncEndpoint.bucket(provider, configuration: linked).identity == "local:\(provider.root.path)")
        #expect(provider.root.path.hasSuffix("/real"))
        let missing = BuckiaConfiguration(provider: .local, bucketName: "m", options: ["root": link.appendingPathComponent("not/yet").path])
        #expect(try SyncEndpoint.bucket(provider, configuration: missing).identity == "local:\(real.path)/not/yet")
        #expect(!FileManager.default.fileExists(atPath: real.appendingPathComponent("not").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: real.path).isEmpty, "nothing swept or made in the folder")
    }

    @Test("A leading ~ in a local root is the given environment's HOME")
    func homeFromEnvironment() throws {
        let home = try TestFolder.make("buckia-endpoint-home")
        defer { TestFolder.remove(home) }
        let configuration = BuckiaConfiguration(provider: .local, bucketName: "home", options: ["root": "~/sync"])
        let remote = try SyncEndpoint.bucket(
            try LocalProvider(configuration: configuration, environment: ["HOME": home.path]), configuration: configuration,
            environment: ["HOME": home.path])
        #expect(remote.identity == "local:\(home.path)/sync")
    }
}
