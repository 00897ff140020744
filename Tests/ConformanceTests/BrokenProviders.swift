import Buckia
import BuckiaConformance
import Foundation
import Testing

// Deliberately broken providers: each forwards to a memory provider and breaks one promise,
// so each contract scenario is shown to fail when its contract is broken.

/// Folds every key to NFC, as a provider keyed by Swift `String` comparison effectively does.
struct NormalizingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func fold(_ key: ObjectKey) throws -> ObjectKey { try ObjectKey(key.rawValue.precomposedStringWithCanonicalMapping) }
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await base.uploadData(data, remotePath: fold(remotePath), options: options)
    }
    func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        try await base.readData(remotePath: fold(remotePath), options: options)
    }
    func stat(remotePath: ObjectKey) async throws -> RemoteFile? { try await base.stat(remotePath: fold(remotePath)) }
    func deleteFile(remotePath: ObjectKey) async throws { try await base.deleteFile(remotePath: fold(remotePath)) }
}

/// A lister that reports entity tags stat does not.
struct StaleListingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    actor Lister: ObjectLister {
        let inner: any ObjectLister
        init(_ inner: any ObjectLister) { self.inner = inner }
        func nextPage() async throws -> ListPage? {
            guard var page = try await inner.nextPage() else { return nil }
            page.entries = page.entries.map { entry in
                guard var file = entry.file else { return entry }
                file.etag = "\"stale\""
                return .object(file)
            }
            return page
        }
    }
    func makeLister(_ request: ListRequest) async throws -> any ObjectLister { Lister(try await base.makeLister(request)) }
}

/// Hands out resume tokens but starts every listing from the beginning.
struct RestartingListingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        try await base.makeLister(ListRequest(options: request.options))
    }
}

/// Keeps modification times to the whole second only, while declaring microseconds.
struct SecondsProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var options = options
        options.modificationDate = options.modificationDate.map { Date(timeIntervalSince1970: $0.timeIntervalSince1970.rounded(.down)) }
        return try await base.uploadData(data, remotePath: remotePath, options: options)
    }
}

/// Drops write conditions.
struct ConditionDroppingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var options = options
        options.condition = nil
        return try await base.uploadData(data, remotePath: remotePath, options: options)
    }
    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var options = options
        options.condition = nil
        return try await base.uploadFile(localURL: localURL, remotePath: remotePath, options: options)
    }
}

/// Drops read conditions.
struct ReadConditionDroppingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        try await base.readData(remotePath: remotePath, options: ReadOptions(range: options.range))
    }
    func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        try await base.downloadFile(remotePath: remotePath, localURL: localURL, options: ReadOptions(range: options.range))
    }
}

/// Drops the checksums the caller knows, so nothing checks them.
struct ChecksumDroppingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var options = options
        options.knownChecksums = [:]
        return try await base.uploadData(data, remotePath: remotePath, options: options)
    }
    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var options = options
        options.knownChecksums = [:]
        return try await base.uploadFile(localURL: localURL, remotePath: remotePath, options: options)
    }
}

/// Drops user metadata.
struct MetadataDroppingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var options = options
        options.metadata = [:]
        return try await base.uploadData(data, remotePath: remotePath, options: options)
    }
}

/// Claims to set modification times but changes nothing.
struct TimeIgnoringProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile {
        guard let file = try await base.stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "setModificationTime") }
        return file
    }
}

/// "Moves" by copying, leaving the source behind.
struct CopyingMoveProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        try await base.copyFile(from: source, to: destination)
    }
}

/// One broken provider and the scenario that must catch it.
struct BrokenCase: Sendable, CustomTestStringConvertible {
    let scenario: String
    let make: @Sendable (any StorageProvider) -> any StorageProvider
    let what: String

    var testDescription: String { "\(what) fails “\(scenario)”" }

    static let all: [BrokenCase] = [
        BrokenCase(scenario: "keys: NFC and NFD are two objects", make: { NormalizingProvider(base: $0) }, what: "keys folded to NFC"),
        BrokenCase(scenario: "list: entries agree with stat", make: { StaleListingProvider(base: $0) }, what: "listed etags stat disagrees with"),
        BrokenCase(scenario: "list: a resume token continues the listing", make: { RestartingListingProvider(base: $0) }, what: "resume tokens ignored"),
        BrokenCase(scenario: "times: kept within the declared precision", make: { SecondsProvider(base: $0) }, what: "times cut to seconds"),
        BrokenCase(scenario: "write: if-none-match creates once", make: { ConditionDroppingProvider(base: $0) }, what: "write conditions dropped"),
        BrokenCase(scenario: "write: if-match replaces only the version read", make: { ConditionDroppingProvider(base: $0) }, what: "write conditions dropped"),
        BrokenCase(scenario: "read: if-match reads only the version given", make: { ReadConditionDroppingProvider(base: $0) }, what: "read conditions dropped"),
        BrokenCase(scenario: "write: known checksums are verified", make: { ChecksumDroppingProvider(base: $0) }, what: "known checksums dropped"),
        BrokenCase(scenario: "metadata: user metadata round-trips", make: { MetadataDroppingProvider(base: $0) }, what: "metadata dropped"),
        BrokenCase(scenario: "times: set without rewriting", make: { TimeIgnoringProvider(base: $0) }, what: "setModificationTime ignored"),
        BrokenCase(scenario: "move: renames in one step", make: { CopyingMoveProvider(base: $0) }, what: "move that copies"),
    ]
}

@Suite("Contract scenarios fail a provider that breaks their contract")
struct BrokenProviderTests {
    @Test(arguments: BrokenCase.all)
    func scenarioCatchesBrokenProvider(_ broken: BrokenCase) async throws {
        let scenario = try #require(ProviderConformance.scenarios.first { $0.name == broken.scenario }, "no scenario named \(broken.scenario)")
        let base = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        // The scenario passes on the provider underneath, so a failure is the breakage's doing.
        #expect(await ProviderConformance.run(scenario, on: base) == .passed)
        let outcome = await ProviderConformance.run(scenario, on: broken.make(try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))))
        guard case .failed = outcome else {
            Issue.record("\(broken.what): expected “\(broken.scenario)” to fail, got \(outcome)")
            return
        }
    }
}
