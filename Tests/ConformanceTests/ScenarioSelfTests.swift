import Buckia
import BuckiaConformance
import Foundation
import Testing

/// A provider that claims streaming but holds whole files in memory: the bounded-memory
/// scenario must catch it.
struct BufferingProvider: StorageProvider {
    let inner: LocalProvider
    var providerType: ProviderType { "buffering" }
    var capabilities: ProviderCapabilities { inner.capabilities }

    func testConnection() async throws -> ConnectionStatus { try await inner.testConnection() }
    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await inner.uploadData(try Data(contentsOf: localURL), remotePath: remotePath, options: options)
    }
    func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        let data = try await inner.readData(remotePath: remotePath, range: nil)
        try data.write(to: localURL)
        guard let file = try await inner.stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "download") }
        return DownloadResult(file: file, localURL: localURL)
    }
    func deleteFile(remotePath: ObjectKey) async throws { try await inner.deleteFile(remotePath: remotePath) }
    func stat(remotePath: ObjectKey) async throws -> RemoteFile? { try await inner.stat(remotePath: remotePath) }
    func makeLister(_ request: ListRequest) async throws -> any ObjectLister { try await inner.makeLister(request) }
}

@Suite("Conformance scenarios catch what they claim to")
struct ScenarioSelfTests {
    // Regression: the memory sampler once ran on the shared task pool and was starved by the
    // blocking transfer it measured, so a buffering provider passed.
    @Test("The bounded-memory scenario fails a provider that buffers whole files",
          .enabled(if: MemoryProbe.residentBytes() != nil, "needs /proc to read resident memory"))
    func boundedMemoryCatchesBuffering() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-buffering-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let provider = BufferingProvider(inner: try LocalProvider(root: root, durable: false))
        let scenario = try #require(ProviderConformance.scenarios.first { $0.name == "transfers: large file with bounded memory" })
        let outcome = await ProviderConformance.run(scenario, on: provider)
        guard case .failed(let message) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(message.contains("resident memory rose"))
    }
}
