import BuckiaCore
import BuckiaProviderKit
import Foundation

extension ProviderType {
    /// The name configurations select ``ScratchProvider`` by.
    public static let scratch: ProviderType = "scratch"
}

/// A provider that keeps objects in process memory, in named spaces: scratch storage for
/// tests and demonstrations, and a complete third-party provider.
///
/// Every instance configured with the same `space` sees the same objects, for as long as the
/// process lives; nothing outlives it, so the provider does not claim
/// ``Capability/persistent``. Objects are held whole in memory, so it does not claim
/// ``Capability/streamingTransfers`` either.
///
/// Options: `space` (default `default`) names the store the instance works in.
///
/// ```swift
/// var registry = ProviderRegistry()
/// try registry.register(ScratchProvider.self)
/// let configuration = BuckiaConfiguration(provider: .scratch, options: ["space": "demo"])
/// let provider = try registry.makeProvider(for: configuration)
/// try await provider.uploadData(Data("hi".utf8), remotePath: "greetings/hello.txt")
/// ```
public struct ScratchProvider: StorageProviderPlugin {
    /// `scratch`.
    public static let providerType: ProviderType = .scratch

    /// The options this provider reads.
    public static let knownOptions: Set<String>? = ["space"]

    /// The largest listing page.
    static let pageSize = 1000

    /// The store this instance works in, shared with every instance configured alike.
    private let space: ScratchSpace

    /// What an in-memory store can promise: ranged reads, listings that start after a key, page
    /// and resume, modification times as given, and SHA-256 in every listing entry.
    public let capabilities = ProviderCapabilities(
        features: [.readWithRange, .listStartAfter, .pagedListing, .preservesModificationTime, .resumableListing],
        checksums: [.sha256: .listing], listedFields: [.modificationDate],
        modificationTimePrecision: .microseconds(1), maxListPageSize: ScratchProvider.pageSize)

    /// Opens the space the configuration names, creating it empty if this process has not
    /// used it yet.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for an option other than `space`,
    ///   or an empty space name.
    public init(context: ProviderContext) throws {
        let configuration = context.configuration
        try configuration.checkOptions(known: Self.knownOptions ?? [])
        let name = configuration.options["space"] ?? "default"
        guard !name.isEmpty else {
            throw BuckiaError(.invalidConfiguration, "The scratch provider's space must not be empty.", path: "options.space")
        }
        space = ScratchSpace.named(name)
    }

    public func testConnection() async throws -> ConnectionStatus {
        ConnectionStatus(isConnected: true, message: "Scratch space \(space.name.debugDescription) holds \(space.count) objects.")
    }

    /// Reads the file into memory, keeping its modification time unless `options` gives one.
    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var options = options
        var data = Data()
        do {
            if options.modificationDate == nil {
                options.modificationDate = try FileManager.default.attributesOfItem(atPath: localURL.path)[.modificationDate] as? Date
            }
            for try await chunk in try ByteStream.file(localURL) { data.append(chunk) }
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: localURL.path)
        }
        return try await uploadData(data, remotePath: remotePath, options: options)
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try options.validate()
        try options.checkSupported(by: self)
        let file = RemoteFile(
            path: remotePath, size: Int64(data.count), modificationDate: options.modificationDate ?? Date(),
            checksums: [.sha256: try Hashing.digest(data, .sha256).hex])
        space.put(ScratchSpace.Object(data: data, file: file))
        return file
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        try options.checkSupported(by: self)
        let object = try object(at: remotePath, operation: "download")
        do {
            let written = AtomicFile.Options(modificationDate: object.file.modificationDate)
            try AtomicFile.write(object.bytes(in: options.range), to: localURL, options: written)
        } catch {
            throw BuckiaError.wrapping(error, operation: "download", path: localURL.path)
        }
        return DownloadResult(file: object.file, localURL: localURL)
    }

    public func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        try options.checkSupported(by: self)
        return try object(at: remotePath, operation: "read").bytes(in: options.range)
    }

    private func object(at key: ObjectKey, operation: String) throws -> ScratchSpace.Object {
        guard let object = space.object(at: key) else { throw BuckiaError.notFound(key, operation: operation) }
        return object
    }

    public func deleteFile(remotePath: ObjectKey) async throws {
        space.remove(remotePath)
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        space.object(at: remotePath)?.file
    }

    /// Lists the objects present when the listing starts; the snapshot lister validates the
    /// prefix, sorts by bytes, and applies start-after, resume tokens, roll-up and paging.
    public func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        let entries = space.files(withPrefix: request.options.prefix).map(ListEntry.object)
        return try SnapshotLister(entries: entries, request: request, maxPageSize: Self.pageSize)
    }
}
