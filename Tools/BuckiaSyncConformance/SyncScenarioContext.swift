import BuckiaConformance
import BuckiaCore
import BuckiaSync
import Foundation


/// Which side of a sync a scenario touches.
public enum SyncSide: String, Sendable {
    case local, remote
}

/// How a scenario's runs are made: by ``SyncEngine`` itself, or, in Buckia's mutation
/// harness, by an engine broken on purpose to show the scenario catches it.
package typealias SyncRunner = @Sendable (_ local: SyncEndpoint, _ remote: SyncEndpoint, _ options: SyncOptions, _ store: SyncStateStore) async throws -> SyncResult

/// What a sync scenario works with: two endpoints under prefixes no other scenario uses, a
/// state store of their own, and a record of what each run asked of the providers.
public struct SyncScenarioContext: Sendable {
    /// The first side (a local folder, in Buckia's own runs).
    public let local: SyncEndpoint
    /// The second side: the provider under test.
    public let remote: SyncEndpoint
    /// Where this pair's state store lives.
    public let stateURL: URL
    /// What the providers were asked, per side, since ``resetCounts()``.
    public let observer: SyncObserver
    /// The modification time the scenario's next write gets: ten seconds later each time, so
    /// every edit is visible to size-and-time comparison too, whatever its window.
    private let clock = Locked(Date(timeIntervalSince1970: 1_750_000_000))
    private let runner: SyncRunner

    init(local: SyncEndpoint, remote: SyncEndpoint, stateURL: URL, observer: SyncObserver, runner: @escaping SyncRunner) {
        self.local = local
        self.remote = remote
        self.stateURL = stateURL
        self.observer = observer
        self.runner = runner
    }

    /// The endpoint of `side`.
    public func endpoint(_ side: SyncSide) -> SyncEndpoint { side == .local ? local : remote }

    /// Runs one sync of this pair with `options`, on the pair's state store.
    public func sync(_ options: SyncOptions = SyncOptions()) async throws -> SyncResult {
        let store = try SyncStateStore(url: stateURL)
        defer { store.close() }
        return try await runner(local, remote, options, store)
    }

    /// Writes `text` as `path` on `side`, dated ten seconds after the previous write.
    public func write(_ side: SyncSide, _ path: String, _ text: String) async throws {
        let date = clock.withLock { now in
            now = now.addingTimeInterval(10)
            return now
        }
        let endpoint = endpoint(side)
        _ = try await observer.unobserved {
            try await endpoint.provider.uploadData(Data(text.utf8), remotePath: ObjectKey(endpoint.prefix + path), options: UploadOptions(modificationDate: date))
        }
    }

    /// Renames `from` to `to` on `side` as a user does: the same bytes and modification time
    /// under the new name (a native move where the provider has one, else a copy and a delete).
    public func rename(_ side: SyncSide, _ from: String, _ to: String) async throws {
        let endpoint = endpoint(side)
        let (source, target) = (try ObjectKey(endpoint.prefix + from), try ObjectKey(endpoint.prefix + to))
        try await observer.unobserved {
            if endpoint.provider.capabilities.supports(.move) {
                _ = try await endpoint.provider.moveFile(from: source, to: target)
            } else if endpoint.provider.capabilities.supports(.serverSideCopy) {
                _ = try await endpoint.provider.copyFile(from: source, to: target)
                try await endpoint.provider.deleteFile(remotePath: source)
            } else {
                let data = try await endpoint.provider.readData(remotePath: source, options: ReadOptions())
                let modified = try await endpoint.provider.stat(remotePath: source)?.effectiveModificationDate
                _ = try await endpoint.provider.uploadData(data, remotePath: target, options: UploadOptions(modificationDate: modified))
                try await endpoint.provider.deleteFile(remotePath: source)
            }
        }
    }

    /// Removes `path` from `side`.
    public func remove(_ side: SyncSide, _ path: String) async throws {
        let endpoint = endpoint(side)
        try await observer.unobserved { try await endpoint.provider.deleteFile(remotePath: ObjectKey(endpoint.prefix + path)) }
    }

    /// Every file on `side` with its text, by path relative to the endpoint (keys compare by
    /// bytes, so two spellings of one name are two entries).
    public func contents(_ side: SyncSide) async throws -> [ObjectKey: String] {
        let endpoint = endpoint(side)
        return try await observer.unobserved {
            var files: [ObjectKey: String] = [:]
            for try await entry in endpoint.provider.list(ListOptions(prefix: endpoint.prefix)) {
                guard let file = entry.file, let relative = file.path.dropping(prefix: endpoint.prefix) else { continue }
                let data = try await endpoint.provider.readData(remotePath: file.path, options: ReadOptions())
                files[try ObjectKey(relative)] = String(decoding: data, as: UTF8.self)
            }
            return files
        }
    }

    /// Fails unless `side` holds exactly `expected`.
    public func expect(_ side: SyncSide, _ expected: KeyValuePairs<String, String>, _ what: String) async throws {
        let wanted = try Self.files(expected)
        let found = try await contents(side)
        guard found == wanted else {
            throw ConformanceFailure("\(what): the \(side) side holds \(Self.show(found)), expected \(Self.show(wanted)).")
        }
    }

    /// Fails unless both sides hold exactly `expected`.
    public func expectBoth(_ expected: KeyValuePairs<String, String>, _ what: String) async throws {
        try await expect(.local, expected, what)
        try await expect(.remote, expected, what)
    }

    /// Fails unless both sides hold exactly `expected`.
    public func expectBoth(_ expected: [ObjectKey: String], _ what: String) async throws {
        for side in [SyncSide.local, .remote] {
            let found = try await contents(side)
            guard found == expected else {
                throw ConformanceFailure("\(what): the \(side) side holds \(Self.show(found)), expected \(Self.show(expected)).")
            }
        }
    }

    static func files(_ pairs: KeyValuePairs<String, String>) throws -> [ObjectKey: String] {
        var files: [ObjectKey: String] = [:]
        for (path, text) in pairs { files[try ObjectKey(path)] = text }
        return files
    }

    static func show(_ files: [ObjectKey: String]) -> String {
        "[" + files.sorted { $0.key < $1.key }.map { "\($0.key.rawValue.debugDescription): \($0.value.debugDescription)" }.joined(separator: ", ") + "]"
    }
}

/// Counts what a sync asks of each side's provider, and fails chosen uploads, so scenarios
/// can check that a no-op run costs only listings and that a failure stops deletes.
public final class SyncObserver: Sendable {
    /// A request kind, as counted.
    public enum Call: String, Sendable, CaseIterable {
        case list, stat, checksum, read, upload, delete, copy, move
    }

    private struct State {
        var counts: [SyncSide: [Call: Int]] = [:]
        var failing: Set<String> = []
        var paused = 0
    }
    private let state = Locked(State())

    /// How many `call`s `side` received since the last reset.
    public func count(_ call: Call, on side: SyncSide) -> Int { state.withLock { $0.counts[side]?[call] ?? 0 } }

    /// Every non-zero count, for messages.
    public func summary() -> String {
        state.withLock { state in
            state.counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { side, calls in
                "\(side): " + calls.filter { $0.value > 0 }.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
            }.joined(separator: "; ")
        }
    }

    /// Forgets the counts.
    public func resetCounts() { state.withLock { $0.counts = [:] } }

    /// Makes uploads to the remote of keys ending in `suffix` fail (transiently), until cleared.
    public func failUploads(endingWith suffix: String?) {
        state.withLock { state in
            if let suffix { state.failing.insert(suffix) } else { state.failing = [] }
        }
    }

    func record(_ call: Call, on side: SyncSide) {
        state.withLock { state in
            guard state.paused == 0 else { return }
            state.counts[side, default: [:]][call, default: 0] += 1
        }
    }

    func shouldFail(_ key: ObjectKey) -> Bool {
        state.withLock { state in state.failing.contains { key.rawValue.hasSuffix($0) } }
    }

    /// Runs the scenario's own reads and writes without counting them.
    func unobserved<T>(_ body: () async throws -> T) async rethrows -> T {
        state.withLock { $0.paused += 1 }
        defer { state.withLock { $0.paused -= 1 } }
        return try await body()
    }

    /// Wraps `provider` so calls to it are counted as `side`'s; its side capabilities (local
    /// files) pass through, as they pass through every ``ForwardingStorageProvider``.
    func wrap(_ provider: any StorageProvider, as side: SyncSide) -> any StorageProvider {
        ObservedProvider(base: provider, side: side, observer: self)
    }
}

/// Counts and fails calls on the way to another provider.
struct ObservedProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    let side: SyncSide
    let observer: SyncObserver

    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(remotePath)
        return try await base.uploadFile(localURL: localURL, remotePath: remotePath, options: options)
    }
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(remotePath)
        return try await base.uploadData(data, remotePath: remotePath, options: options)
    }
    func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(remotePath)
        return try await base.upload(from: stream, remotePath: remotePath, options: options)
    }
    func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
        observer.record(.read, on: side)
        return try await base.openRead(remotePath: remotePath, options: options)
    }
    func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        observer.record(.read, on: side)
        return try await base.downloadFile(remotePath: remotePath, localURL: localURL, options: options)
    }
    func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        observer.record(.read, on: side)
        return try await base.readData(remotePath: remotePath, options: options)
    }
    func deleteFile(remotePath: ObjectKey) async throws {
        observer.record(.delete, on: side)
        try await base.deleteFile(remotePath: remotePath)
    }
    func deleteFiles(_ keys: [ObjectKey]) async throws {
        for _ in keys { observer.record(.delete, on: side) }
        try await base.deleteFiles(keys)
    }
    func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        observer.record(.copy, on: side)
        return try await base.copyFile(from: source, to: destination)
    }
    func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        observer.record(.move, on: side)
        return try await base.moveFile(from: source, to: destination)
    }
    func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        observer.record(.stat, on: side)
        return try await base.stat(remotePath: remotePath)
    }
    func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        observer.record(.checksum, on: side)
        return try await base.checksum(remotePath: remotePath, algorithm: algorithm)
    }
    func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        observer.record(.list, on: side)
        return try await base.makeLister(request)
    }

    func fileForReading(_ key: ObjectKey) throws -> (url: URL, file: RemoteFile) {
        observer.record(.read, on: side)
        return try base.fileForReading(key)
    }
    func receiveFile(at key: ObjectKey, condition: WriteCondition?, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        try check(key)
        return try await base.receiveFile(at: key, condition: condition, fill)
    }

    /// Counts an upload, and fails it when the scenario asked for that.
    func check(_ key: ObjectKey) throws {
        observer.record(.upload, on: side)
        if observer.shouldFail(key) {
            throw BuckiaError(.transient, "Failed on purpose by the scenario.", operation: "upload", path: key.rawValue)
        }
    }
}

