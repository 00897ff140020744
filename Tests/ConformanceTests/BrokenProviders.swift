import Buckia
import BuckiaConformance
import Foundation

// Deliberately broken providers, the mutation harness of the provider scenarios: each breaks
// one promise of the contract over an honest provider, and BrokenProviderTests shows that the
// scenarios listed for it fail (and pass on the honest provider underneath). Tests/ConformanceTests/README.md
// tabulates which breakage each scenario is proven against.

/// One way to break the provider contract, applied by ``BrokenProvider`` over an honest one.
enum Breakage: String, CaseIterable, Sendable {
    case storesAllButLastByte, losesEmptyObjects, readsMissingAsEmpty, statThrowsForMissing, ignoresDeletes
    case failsDeletingMissing, copyLosesTime, copiesWithoutCapability, reportsDisconnected, prefixIsFolder
    case reversesPages, duplicatesEntries, ignoresOneLevel, statsFolderAsObject, ignoresStartAfter, onePageOnly
    case decodesPercentInKeys, acceptsInvalidPrefix, foldsCase, claimsCaseFolding, dropsModificationTime
    case ignoresRange, wrongChecksums, publicURLWithoutCapability, tokenLivesTooLong, tokensWithoutCapability
    case foldsToNFC, staleListedEtags, restartsOnResume, keepsWholeSeconds, dropsWriteConditions
    case dropsReadConditions, dropsKnownChecksums, dropsMetadata, ignoresSetModificationTime, moveCopies
    case fallbackMoveKeepsSource, unknownCapability, splicesVersions, commitsFailedStreams, commitsCancelledStreams
}

/// An honest provider with one ``Breakage`` applied.
struct BrokenProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    let breakage: Breakage

    var capabilities: ProviderCapabilities {
        var capabilities = base.capabilities
        switch breakage {
        case .copiesWithoutCapability: capabilities.features.subtract([.serverSideCopy, .move])
        case .claimsCaseFolding: capabilities.features.insert(.caseInsensitiveKeys)
        case .tokensWithoutCapability: capabilities.features.remove(.accessToken)
        case .fallbackMoveKeepsSource: capabilities.features.remove(.move)
        case .unknownCapability: capabilities.features.insert("listStartAftr")
        default: break
        }
        return capabilities
    }

    /// The key the broken provider really uses for `key`.
    private func mapped(_ key: ObjectKey) throws -> ObjectKey {
        switch breakage {
        case .decodesPercentInKeys: try ObjectKey(key.rawValue.removingPercentEncoding ?? key.rawValue)
        case .foldsCase: try ObjectKey(key.rawValue.lowercased())
        case .foldsToNFC: try ObjectKey(key.rawValue.precomposedStringWithCanonicalMapping)
        default: key
        }
    }

    private func broken(_ options: UploadOptions) -> UploadOptions {
        var options = options
        switch breakage {
        case .dropsModificationTime: options.modificationDate = nil
        case .keepsWholeSeconds: options.modificationDate = options.modificationDate.map { Date(timeIntervalSince1970: $0.timeIntervalSince1970.rounded(.down)) }
        case .dropsWriteConditions: options.condition = nil
        case .dropsKnownChecksums: options.knownChecksums = [:]
        case .dropsMetadata: options.metadata = [:]
        default: break
        }
        return options
    }

    private func broken(_ options: ReadOptions) -> ReadOptions {
        switch breakage {
        case .ignoresRange: ReadOptions(ifMatch: options.ifMatch)
        case .dropsReadConditions: ReadOptions(range: options.range)
        default: options
        }
    }

    func testConnection() async throws -> ConnectionStatus {
        if breakage == .reportsDisconnected { return ConnectionStatus(isConnected: false, message: "broken on purpose") }
        return try await base.testConnection()
    }

    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        if breakage == .losesEmptyObjects && data.isEmpty {
            return RemoteFile(path: remotePath, size: 0)
        }
        let stored = breakage == .storesAllButLastByte ? data.dropLast() : data
        return try await base.uploadData(Data(stored), remotePath: mapped(remotePath), options: broken(options))
    }

    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var options = options
        if breakage == .storesAllButLastByte {
            let source = try LocalFile.openForReading(localURL)
            let modified = try options.modificationDate ?? source.status().modificationDate
            try? source.close()
            options.modificationDate = modified
            return try await uploadData(try Data(contentsOf: localURL), remotePath: remotePath, options: options)
        }
        options = broken(options)
        // The file's own time is what an upload without a date keeps: replace it with another.
        if breakage == .dropsModificationTime { options.modificationDate = Date(timeIntervalSince1970: 0) }
        return try await base.uploadFile(localURL: localURL, remotePath: mapped(remotePath), options: options)
    }

    func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        switch breakage {
        case .storesAllButLastByte:
            var data = Data()
            for try await chunk in stream { data.append(chunk) }
            return try await uploadData(data, remotePath: remotePath, options: options)
        case .commitsFailedStreams:
            // What arrived before the stream failed is stored as if it were the whole.
            var data = Data()
            do {
                for try await chunk in stream { data.append(chunk) }
            } catch {}
            return try await base.uploadData(data, remotePath: mapped(remotePath), options: broken(options))
        case .commitsCancelledStreams:
            // Reads to the stream's end without asking whether the task was cancelled meanwhile.
            var data = Data()
            for try await chunk in stream { data.append(chunk) }
            return try await base.uploadData(data, remotePath: mapped(remotePath), options: broken(options))
        default:
            return try await base.upload(from: stream, remotePath: mapped(remotePath), options: broken(options))
        }
    }

    func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        do {
            return try await base.readData(remotePath: mapped(remotePath), options: broken(options))
        } catch let error as BuckiaError where error.code == .notFound && breakage == .readsMissingAsEmpty {
            return Data()
        }
    }

    func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
        let key = try mapped(remotePath)
        switch breakage {
        case .splicesVersions:
            // Ranges read one by one with no version held and no check at the end.
            guard let file = try await base.stat(remotePath: key) else { throw BuckiaError.notFound(remotePath, operation: "read") }
            let offset = Locked<Int64>(0)
            let bytes = ByteStream {
                let start = offset.withLock { $0 }
                guard start < file.size else { return nil }
                let chunk = try await base.readData(remotePath: key, options: ReadOptions(range: start..<min(file.size, start + 1_048_576)))
                offset.withLock { $0 = start + Int64(chunk.count) }
                return chunk.isEmpty ? nil : chunk
            }
            return try ObjectReadStream(file: file, bytes: bytes, verifyChecksums: false, key: remotePath)
        case .storesAllButLastByte, .readsMissingAsEmpty:
            // What the broken reads hand out, as a stream.
            let data = try await readData(remotePath: remotePath, options: options)
            let file = RemoteFile(path: remotePath, size: Int64(data.count))
            return try ObjectReadStream(file: file, bytes: .of(data), verifyChecksums: false, key: remotePath)
        default:
            return try await base.openRead(remotePath: key, options: broken(options))
        }
    }

    func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        do {
            return try await base.downloadFile(remotePath: mapped(remotePath), localURL: localURL, options: broken(options))
        } catch let error as BuckiaError where error.code == .notFound && breakage == .readsMissingAsEmpty {
            try Data().write(to: localURL)
            return DownloadResult(file: RemoteFile(path: remotePath, size: 0), localURL: localURL)
        }
    }

    func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        let key = try mapped(remotePath)
        if let file = try await base.stat(remotePath: key) { return file }
        switch breakage {
        case .statThrowsForMissing:
            throw BuckiaError.notFound(remotePath, operation: "stat")
        case .statsFolderAsObject:
            for try await _ in base.list(ListOptions(prefix: remotePath.rawValue + "/")) {
                return RemoteFile(path: remotePath, size: 0)
            }
            return nil
        default:
            return nil
        }
    }

    func deleteFile(remotePath: ObjectKey) async throws {
        if breakage == .ignoresDeletes { return }
        if breakage == .failsDeletingMissing, try await base.stat(remotePath: remotePath) == nil {
            throw BuckiaError.notFound(remotePath, operation: "delete")
        }
        try await base.deleteFile(remotePath: mapped(remotePath))
    }

    func deleteFiles(_ keys: [ObjectKey]) async throws {
        for key in keys { try await deleteFile(remotePath: key) }
    }

    func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        guard breakage == .copyLosesTime else { return try await base.copyFile(from: source, to: destination) }
        let data = try await base.readData(remotePath: source, options: ReadOptions())
        return try await base.uploadData(data, remotePath: destination, options: UploadOptions())
    }

    func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        switch breakage {
        case .moveCopies, .fallbackMoveKeepsSource: try await base.copyFile(from: source, to: destination)
        default: try await base.moveFile(from: source, to: destination)
        }
    }

    func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile {
        guard breakage == .ignoresSetModificationTime else { return try await base.setModificationTime(remotePath: remotePath, to: date) }
        guard let file = try await base.stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "setModificationTime") }
        return file
    }

    func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        let value = try await base.checksum(remotePath: mapped(remotePath), algorithm: algorithm)
        guard breakage == .wrongChecksums, let value else { return value }
        return String(value.reversed())
    }

    func getPublicURL(remotePath: ObjectKey) throws -> URL {
        if breakage == .publicURLWithoutCapability { return URL(fileURLWithPath: "/dev/null") }
        return try base.getPublicURL(remotePath: remotePath)
    }

    func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken {
        var options = options
        if breakage == .tokenLivesTooLong { options.expiry = options.expiry * 2 }
        return try await base.generateAccessToken(options: options)
    }

    func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        var request = request
        switch breakage {
        case .prefixIsFolder where !request.options.prefix.isEmpty && !request.options.prefix.hasSuffix("/"):
            request.options.prefix += "/"
        case .ignoresOneLevel: request.options.recursive = true
        case .ignoresStartAfter: request.options.startAfter = nil
        case .restartsOnResume: request.resumeToken = nil
        case .acceptsInvalidPrefix:
            if (try? ObjectKey.validatePrefix(request.options.prefix)) == nil { return PageLister(pages: []) }
        default: break
        }
        let inner = try await base.makeLister(request)
        switch breakage {
        case .reversesPages: return MappedLister(inner) { ListPage(entries: $0.entries.reversed(), resumeToken: $0.resumeToken) }
        case .duplicatesEntries: return MappedLister(inner) { ListPage(entries: $0.entries + $0.entries.prefix(1), resumeToken: $0.resumeToken) }
        case .staleListedEtags:
            return MappedLister(inner) { page in
                ListPage(entries: page.entries.map { entry in
                    guard var file = entry.file else { return entry }
                    file.etag = "\"stale\""
                    return .object(file)
                }, resumeToken: page.resumeToken)
            }
        case .onePageOnly:
            var entries: [ListEntry] = []
            while let page = try await inner.nextPage() { entries += page.entries }
            return PageLister(pages: [ListPage(entries: entries)])
        default: return inner
        }
    }
}

/// Pages from another lister, each changed by `transform`.
struct MappedLister: ObjectLister {
    let inner: any ObjectLister
    let transform: @Sendable (ListPage) -> ListPage
    init(_ inner: any ObjectLister, transform: @escaping @Sendable (ListPage) -> ListPage) {
        self.inner = inner
        self.transform = transform
    }
    func nextPage() async throws -> ListPage? { try await inner.nextPage().map(transform) }
}

/// Fixed pages, handed out once each.
actor PageLister: ObjectLister {
    private var pages: [ListPage]
    init(pages: [ListPage]) { self.pages = pages }
    func nextPage() async throws -> ListPage? { pages.isEmpty ? nil : pages.removeFirst() }
}

/// Keys compared as Swift `String`s, as a `[String: Data]` store would: the first spelling of
/// a canonically equal key (NFC or NFD) stands for both.
struct StringKeyedProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    private let spellings = Locked<[String: ObjectKey]>([:])

    init(base: any StorageProvider) { self.base = base }

    private func key(_ key: ObjectKey) -> ObjectKey {
        spellings.withLock { spellings in
            if let known = spellings[key.rawValue] { return known }
            spellings[key.rawValue] = key
            return key
        }
    }
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await base.uploadData(data, remotePath: key(remotePath), options: options)
    }
    func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        try await base.readData(remotePath: key(remotePath), options: options)
    }
    func stat(remotePath: ObjectKey) async throws -> RemoteFile? { try await base.stat(remotePath: key(remotePath)) }
    func deleteFile(remotePath: ObjectKey) async throws { try await base.deleteFile(remotePath: key(remotePath)) }
}

/// Hands out a public URL that fetches another object.
struct MisdirectedURLProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func getPublicURL(remotePath: ObjectKey) throws -> URL {
        try base.getPublicURL(remotePath: ObjectKey(remotePath.rawValue + ".elsewhere"))
    }
}

/// Claims streaming but holds whole files in memory.
struct BufferingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await base.uploadData(try Data(contentsOf: localURL), remotePath: remotePath, options: options)
    }
    func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        let data = try await base.readData(remotePath: remotePath, options: options)
        try data.write(to: localURL)
        guard let file = try await base.stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "download") }
        return DownloadResult(file: file, localURL: localURL)
    }
}

/// Streams uploads with an unfinished upload the backend lists while the stream is read (a
/// multipart upload in miniature, over the memory provider), or, `holdsWholeStream`, reads the
/// whole stream before that upload starts: claiming ``Capability/streamingUploads`` either way.
struct StagedUploadProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    let holdsWholeStream: Bool
    private let unfinished = Locked<[String: String]>([:])

    init(base: any StorageProvider, holdsWholeStream: Bool) {
        self.base = base
        self.holdsWholeStream = holdsWholeStream
    }

    var capabilities: ProviderCapabilities {
        var capabilities = base.capabilities
        capabilities.features.formUnion([.streamingUploads, .unfinishedUploads])
        capabilities.uploadPartSize = 1_048_576
        return capabilities
    }

    func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var data = Data()
        if holdsWholeStream {
            for try await chunk in stream { data.append(chunk) }
        }
        unfinished.withLock { $0[remotePath.rawValue] = UUID().uuidString }
        defer { unfinished.withLock { $0[remotePath.rawValue] = nil } }
        if !holdsWholeStream {
            for try await chunk in stream { data.append(chunk) }
        }
        return try await base.uploadData(data, remotePath: remotePath, options: options)
    }

    func unfinishedUploads(prefix: String) async throws -> [UnfinishedUpload] {
        unfinished.withLock { $0 }.filter { $0.key.hasPrefix(prefix) }.map { UnfinishedUpload(key: $0.key, id: $0.value, initiated: nil, status: .unknown) }
    }

    func abortUpload(_ upload: UnfinishedUpload) async throws {
        unfinished.withLock { $0[upload.key] = nil }
    }
}

// MARK: Honest wrappers, the passing side of a mutant that changes capabilities

/// Does without some capabilities, honestly: what they promise throws `unsupported`, and a
/// move without `move` copies and deletes where the provider copies server-side.
struct HidingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    let hidden: Set<Capability>

    var capabilities: ProviderCapabilities {
        var capabilities = base.capabilities
        capabilities.features.subtract(hidden)
        return capabilities
    }

    func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        guard !hidden.contains(.serverSideCopy) else { throw BuckiaError.unsupported(.serverSideCopy, provider: providerType, operation: "copyFile") }
        return try await base.copyFile(from: source, to: destination)
    }

    func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        guard hidden.contains(.move) else { return try await base.moveFile(from: source, to: destination) }
        guard !hidden.contains(.serverSideCopy) else { throw BuckiaError.unsupported(.move, provider: providerType, operation: "moveFile") }
        let moved = try await base.copyFile(from: source, to: destination)
        try await base.deleteFile(remotePath: source)
        return moved
    }

    func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken {
        guard !hidden.contains(.accessToken) else { throw BuckiaError.unsupported(.accessToken, provider: providerType, operation: "generateAccessToken") }
        return try await base.generateAccessToken(options: options)
    }

    func createFolder(_ key: ObjectKey) async throws {
        guard !hidden.contains(.folders) else { throw BuckiaError.unsupported(.folders, provider: providerType, operation: "createFolder") }
        try await base.createFolder(key)
    }

    func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String {
        guard !hidden.contains(.partUploads) else { throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "startPartUpload") }
        return try await base.startPartUpload(to: key, options: options)
    }

    func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        guard !hidden.contains(.partUploads) else { throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "uploadPart") }
        return try await base.uploadPart(number, of: upload, to: key, file: file, md5: md5)
    }

    func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart] {
        guard !hidden.contains(.partUploads) else { throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "uploadedParts") }
        return try await base.uploadedParts(of: upload, to: key)
    }

    func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        guard !hidden.contains(.partUploads) else { throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "completePartUpload") }
        guard condition == nil || !hidden.contains(.conditionalCompletion) else {
            throw BuckiaError.unsupported(.conditionalCompletion, provider: providerType, operation: "completePartUpload")
        }
        if hidden.contains(.partSelections) {
            // Honest as B2 is: every held part, 1…N, two at least, or nothing.
            let held: [UploadedPart]
            do {
                held = try await base.uploadedParts(of: upload, to: key)
            } catch let error as BuckiaError where error.code == .notFound {
                return try await base.completePartUpload(upload, to: key, parts: parts, condition: condition)  // completed already
            }
            guard parts.count >= 2, parts.map(\.number) == Array(1...parts.count), held.count == parts.count else {
                throw BuckiaError.unsupported(.partSelections, provider: providerType, operation: "completePartUpload")
            }
        }
        return try await base.completePartUpload(upload, to: key, parts: parts, condition: condition)
    }

    func abortPartUpload(_ upload: String, to key: ObjectKey) async throws {
        guard !hidden.contains(.partUploads) else { throw BuckiaError.unsupported(.partUploads, provider: providerType, operation: "abortPartUpload") }
        try await base.abortPartUpload(upload, to: key)
    }

    func folderDate(_ key: ObjectKey) async throws -> Date? {
        guard !hidden.contains(.folders) else { throw BuckiaError.unsupported(.folders, provider: providerType, operation: "folderDate") }
        return try await base.folderDate(key)
    }

    func deleteFolder(_ key: ObjectKey) async throws {
        guard !hidden.contains(.folders) else { throw BuckiaError.unsupported(.folders, provider: providerType, operation: "deleteFolder") }
        try await base.deleteFolder(key)
    }
}

/// Folds keys to lower case, and says so.
struct CaseFoldingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    var capabilities: ProviderCapabilities { base.capabilities.adding(.caseInsensitiveKeys) }
    private func folded(_ key: ObjectKey) throws -> ObjectKey { try ObjectKey(key.rawValue.lowercased()) }
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await base.uploadData(data, remotePath: folded(remotePath), options: options)
    }
    func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        try await base.readData(remotePath: folded(remotePath), options: options)
    }
    func stat(remotePath: ObjectKey) async throws -> RemoteFile? { try await base.stat(remotePath: folded(remotePath)) }
    func deleteFile(remotePath: ObjectKey) async throws { try await base.deleteFile(remotePath: folded(remotePath)) }
}

// MARK: Plugins, for the scenarios that build providers from a configuration

/// Memory shared by every instance configured with the same `space`, for the plugin mutants.
enum SharedSpaces {
    private static let spaces = Locked<[String: MemoryProvider]>([:])

    static func provider(_ space: String) throws -> MemoryProvider {
        try spaces.withLock { spaces in
            if let existing = spaces[space] { return existing }
            let made = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
            spaces[space] = made
            return made
        }
    }
}

/// The honest plugin: instances with the same `space` share objects, so it may declare
/// `persistent` within a process.
struct SharedMemoryProvider: StorageProviderPlugin, ForwardingStorageProvider {
    static let providerType: ProviderType = "sharedmemory"
    static let knownOptions: Set<String>? = ["space"]
    let base: any StorageProvider
    var providerType: ProviderType { Self.providerType }
    var capabilities: ProviderCapabilities { base.capabilities.adding(.persistent) }
    init(context: ProviderContext) throws {
        try context.configuration.checkOptions(known: Self.knownOptions ?? [])
        base = try SharedSpaces.provider(context.configuration.requireOption("space"))
    }
}

/// Declares `persistent`, but every instance starts empty.
struct ForgetfulProvider: StorageProviderPlugin, ForwardingStorageProvider {
    static let providerType: ProviderType = "forgetful"
    let base: any StorageProvider
    var providerType: ProviderType { Self.providerType }
    var capabilities: ProviderCapabilities { base.capabilities.adding(.persistent) }
    init(context: ProviderContext) throws {
        try context.configuration.checkOptions(known: ["space"])
        base = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
    }
}

/// Ignores options it does not know instead of refusing them.
struct LaxOptionsProvider: StorageProviderPlugin, ForwardingStorageProvider {
    static let providerType: ProviderType = "lax"
    let base: any StorageProvider
    var providerType: ProviderType { Self.providerType }
    init(context: ProviderContext) throws {
        base = try SharedSpaces.provider(context.configuration.options["space"] ?? "lax")
    }
}

/// Registered under one type name, but reports another.
struct MisnamedProvider: StorageProviderPlugin, ForwardingStorageProvider {
    static let providerType: ProviderType = "misnamed"
    let base: any StorageProvider
    var providerType: ProviderType { "somethingelse" }
    init(context: ProviderContext) throws {
        try context.configuration.checkOptions(known: ["space"])
        base = try SharedSpaces.provider(context.configuration.requireOption("space"))
    }
}

extension ProviderCapabilities {
    fileprivate func adding(_ capability: Capability) -> ProviderCapabilities {
        var copy = self
        copy.features.insert(capability)
        return copy
    }
}
