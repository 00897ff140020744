import BuckiaCore
import Foundation

/// One run's steps in flight: performs them, counts them, and records each completed path's
/// new baseline in the state store in small transactions, so a killed run keeps what it did.
final class SyncExecution: Sendable {
    let engine: SyncEngine
    let events: @Sendable (SyncEvent) -> Void
    private let state = Locked(State())

    private struct State {
        var result = SyncResult()
        var pending: [(ObjectKey, SyncBaseline?)] = []
        var lastFlush = ContinuousClock.now
    }

    /// Baselines are written when this many are pending, or this long after the last write.
    static let flushCount = 256
    static let flushInterval: Duration = .seconds(1)

    /// Both sides as open-file stores, when both are (folder to folder on this machine):
    /// looked up once, not cast again for every file.
    private let openStores: (local: any OpenFileStore, remote: any OpenFileStore)?

    init(engine: SyncEngine, events: @escaping @Sendable (SyncEvent) -> Void) {
        self.engine = engine
        self.events = events
        if let local = engine.local.provider as? any OpenFileStore, let remote = engine.remote.provider as? any OpenFileStore {
            openStores = (local, remote)
        } else {
            openStores = nil
        }
    }

    var failureCount: Int { state.withLock { $0.result.failures.count } }

    /// Performs `actions`, at most ``SyncOptions/maxConcurrentOperations`` at once. A step
    /// that fails is counted and reported; only cancellation ends the whole run.
    func perform(_ steps: consuming [SyncStep]) async throws {
        var work = steps
        for step in work {
            switch step.action {
            case .record(let path):
                if let mine = step.local, let theirs = step.remote { note(path, SyncBaseline(local: mine, remote: theirs)) }
                try await flushIfDue()
            case .forget(let path):
                note(path, nil)
                try await flushIfDue()
            default:
                break
            }
        }
        // In place: the work is the steps less what was only noted.
        work.removeAll { step in
            switch step.action {
            case .record, .forget: true
            default: false
            }
        }
        // The batch's writes into a local folder reuse each folder's handle (FolderHandles);
        // a batch is a few thousand paths, so nothing is held past it.
        try await FolderHandles.$current.withValue(FolderHandles()) {
            try await performConcurrently(work)
        }
    }

    private func performConcurrently(_ work: [SyncStep]) async throws {
        try await forEachConcurrently(work, width: engine.options.maxConcurrentOperations) { step in
            try Task.checkCancellation()
            let action = step.action
            do {
                try await self.execute(step)
            } catch {
                let wrapped = BuckiaError.wrapping(error, path: action.path.rawValue)
                if wrapped.code == .cancelled || Task.isCancelled { throw wrapped }
                self.state.withLock { $0.result.failures.append(SyncFailure(path: action.path, action: action, error: wrapped)) }
                self.events(.failed(action, wrapped))
            }
            try await self.flushIfDue()
        }
    }

    func skipDeletes(_ reason: String) {
        state.withLock { $0.result.deletesSkipped = reason }
        events(.deletesSkipped(reason))
    }

    /// Writes the pending baselines.
    func flush() throws {
        let batch = state.withLock { state -> [(ObjectKey, SyncBaseline?)] in
            defer {
                state.pending = []
                state.lastFlush = .now
            }
            return state.pending
        }
        guard let store = engine.stateStore, !batch.isEmpty else { return }
        // What the store is about to call synced must survive a power cut first.
        try engine.local.provider.synchronize()
        try engine.remote.provider.synchronize()
        try store.apply(batch)
    }

    /// ``flush()`` on Buckia's I/O threads: `syncfs` and the SQLite commit block, and must not
    /// hold a thread of the cooperative pool the transfers run on.
    func flushOffPool() async throws {
        try await BlockingWork.run("record sync state") { try self.flush() }
    }

    private func flushIfDue() async throws {
        let due = state.withLock { $0.pending.count >= Self.flushCount || ContinuousClock.now - $0.lastFlush >= Self.flushInterval }
        if due { try await flushOffPool() }
    }

    private func note(_ path: ObjectKey, _ baseline: SyncBaseline?) {
        state.withLock { $0.pending.append((path, baseline)) }
    }

    func collect(into result: inout SyncResult) {
        let done = state.withLock { $0.result }
        result.uploaded = done.uploaded
        result.bytesUploaded = done.bytesUploaded
        result.downloaded = done.downloaded
        result.bytesDownloaded = done.bytesDownloaded
        result.deletedLocal = done.deletedLocal
        result.deletedRemote = done.deletedRemote
        result.movedLocal = done.movedLocal
        result.movedRemote = done.movedRemote
        result.conflicts = done.conflicts
        result.failures = done.failures.sorted { $0.path < $1.path }
        result.deletesSkipped = done.deletesSkipped
    }

    // MARK: Steps

    private func execute(_ step: SyncStep) async throws {
        let action = step.action
        switch action {
        case .upload(let path):
            try await upload(path, step, action: action)
        case .download(let path):
            try await download(path, step, action: action)
        case .deleteLocal(let path):
            try await delete(path, on: engine.local, expected: step.local, action: action)
            state.withLock { $0.result.deletedLocal += 1 }
        case .deleteRemote(let path):
            try await delete(path, on: engine.remote, expected: step.remote, action: action)
            state.withLock { $0.result.deletedRemote += 1 }
        case .conflict(let path, let resolution):
            state.withLock { $0.result.conflicts += 1 }
            events(.conflict(path, resolution))
            switch resolution {
            case .upload: try await upload(path, step, action: action)
            case .download: try await download(path, step, action: action)
            case .keepBoth(let copy): try await keepBoth(path, step, copy: copy, action: action)
            case .unresolved:
                throw BuckiaError(
                    .conditionNotMatch, "Changed on both sides, and no conflict copy name fits the key length limit; neither version was touched. Rename one side and sync again.",
                    operation: "sync", path: path.rawValue)
            }
        case .moveRemote(let from, let to):
            guard let source = step.local, let doomed = step.remote else { throw vanished(to) }
            let moved = try await move(from, to: to, on: engine.remote, expected: doomed, source: source, action: action)
            note(to, SyncBaseline(local: source, remote: moved))
            state.withLock { $0.result.movedRemote += 1 }
        case .moveLocal(let from, let to):
            guard let source = step.remote, let doomed = step.local else { throw vanished(to) }
            let moved = try await move(from, to: to, on: engine.local, expected: doomed, source: source, action: action)
            note(to, SyncBaseline(local: moved, remote: source))
            state.withLock { $0.result.movedLocal += 1 }
        case .record, .forget:
            break
        }
    }

    /// Moves a renamed file's old copy, `from`, to its new name on `endpoint`: the bytes
    /// `source` (the renamed file on the other side) holds, which the plan showed `expected`
    /// holds too. In a two-way run the new name must still be free (a file made there during
    /// the run is never replaced).
    private func move(
        _ from: ObjectKey, to: ObjectKey, on endpoint: SyncEndpoint, expected: SyncEntry, source: SyncEntry, action: SyncAction
    ) async throws -> SyncEntry {
        events(.started(action, bytes: 0))
        if engine.options.mode == .twoWay, try await endpoint.provider.stat(remotePath: endpoint.key(to)) != nil {
            throw BuckiaError(
                .alreadyExists, "A file appeared at the new name during the run, so the renamed file was not moved over it; sync again.",
                operation: "sync", path: to.rawValue)
        }
        var moved = try await relocate(from, exactlyTo: to, on: endpoint, expected: expected, copying: false)
        note(from, nil)
        // A file changed between the listing and the move: what was moved is not what the
        // other side holds, so no baseline says they are equal (the next run compares them).
        guard moved.size == source.size else {
            throw BuckiaError(.conditionNotMatch, "The file changed while it was moved; sync again to compare it.", operation: "sync", path: to.rawValue)
        }
        moved.checksums.merge(source.checksums) { current, _ in current }
        events(.finished(action, bytes: 0))
        return moved
    }

    private func upload(_ path: ObjectKey, _ step: SyncStep, action: SyncAction) async throws {
        guard let source = step.local else { throw vanished(path) }
        let (stored, sent) = try await transfer(path, from: engine.local, source, to: engine.remote, replacing: step.remote, action: action, upward: true)
        note(path, SyncBaseline(local: sent, remote: stored))
        state.withLock {
            $0.result.uploaded += 1
            $0.result.bytesUploaded = $0.result.bytesUploaded.addingSaturated(stored.size)
        }
    }

    private func download(_ path: ObjectKey, _ step: SyncStep, action: SyncAction) async throws {
        guard let source = step.remote else { throw vanished(path) }
        let (stored, sent) = try await transfer(path, from: engine.remote, source, to: engine.local, replacing: step.local, action: action, upward: false)
        note(path, SyncBaseline(local: stored, remote: sent))
        state.withLock {
            $0.result.downloaded += 1
            $0.result.bytesDownloaded = $0.result.bytesDownloaded.addingSaturated(stored.size)
        }
    }

    /// Keeps both versions: the local one moves aside to `copy` (on the local side, so no
    /// byte is lost whatever fails later), the remote one comes down under the original name,
    /// and the copy goes up.
    private func keepBoth(_ path: ObjectKey, _ step: SyncStep, copy: ObjectKey, action: SyncAction) async throws {
        guard let mine = step.local, let theirs = step.remote else { throw vanished(path) }
        let (copy, moved) = try await relocate(path, to: copy, on: engine.local, expected: mine)
        let (downloaded, got) = try await transfer(path, from: engine.remote, theirs, to: engine.local, replacing: nil, action: action, upward: false)
        note(path, SyncBaseline(local: downloaded, remote: got))
        let (uploaded, sent) = try await transfer(copy, from: engine.local, moved, to: engine.remote, replacing: nil, action: action, upward: true)
        note(copy, SyncBaseline(local: sent, remote: uploaded))
        state.withLock {
            $0.result.downloaded += 1
            $0.result.bytesDownloaded = $0.result.bytesDownloaded.addingSaturated(downloaded.size)
            $0.result.uploaded += 1
            $0.result.bytesUploaded = $0.result.bytesUploaded.addingSaturated(uploaded.size)
        }
    }

    private func vanished(_ path: ObjectKey) -> BuckiaError {
        BuckiaError(.notFound, "The file was in the plan but not in the listing.", operation: "sync", path: path.rawValue)
    }

    /// Copies the version `source` of `path` from one endpoint to the other, replacing exactly
    /// the version `replacing` (or creating the file when it is nil) where the destination can
    /// check that. Returns the stored entry and the source entry as it was sent. `upward`
    /// says which way: from the local endpoint to the remote one, or back.
    private func transfer(
        _ path: ObjectKey, from: SyncEndpoint, _ source: SyncEntry, to: SyncEndpoint, replacing: SyncEntry?, action: SyncAction,
        upward: Bool
    ) async throws -> (stored: SyncEntry, sent: SyncEntry) {
        events(.started(action, bytes: source.size))
        let (file, sent) = try await TransferProgress.$observer.withValue(TransferObserver { [events] bytes in events(.progress(path, bytes: bytes)) }) {
            try await copy(path, from: from, source, to: to, replacing: replacing, upward: upward)
        }
        var stored = SyncEntry(size: file.size, modified: file.modificationDate ?? sent.modified, checksums: file.checksums, etag: file.etag)
        // The bytes stored are the bytes sent: what the source's checksums say holds for both.
        if file.size == sent.size { stored.checksums.merge(sent.checksums) { current, _ in current } }
        events(.finished(action, bytes: file.size))
        return (stored, sent)
    }

    private func copy(
        _ path: ObjectKey, from: SyncEndpoint, _ source: SyncEntry, to: SyncEndpoint, replacing: SyncEntry?, upward: Bool
    ) async throws -> (RemoteFile, SyncEntry) {
        let sourceKey = try from.key(path)
        let targetKey = try to.key(path)
        var condition: WriteCondition?
        if to.provider.capabilities.supports(.conditionalWrite) {
            if let replacing { condition = replacing.etag.map { .ifMatch($0) } } else { condition = .ifNoneMatch }
        }
        // A read of exactly the listed version (If-Match) sends what `source` says; any other
        // read may send a newer version, whose checksums the listing does not know.
        let exact = from.provider.capabilities.supports(.conditionalRead) && source.etag != nil
        let read = ReadOptions(ifMatch: exact ? source.etag : nil)
        let unverified = SyncEntry(size: source.size, modified: source.modified, etag: source.etag)
        // Server-side copies take no condition, so two-way runs (where the destination may be
        // edited meanwhile) copy through this process instead.
        if from.backend == to.backend, to.provider.capabilities.supports(.serverSideCopy), engine.options.mode != .twoWay {
            return (try await to.provider.copyFile(from: sourceKey, to: targetKey), unverified)
        }
        // Folder to folder on this machine: the source opened once, by descriptor, and written
        // on this task when small (a local sync's common case).
        if let stores = openStores {
            let (reader, writer) = upward ? (stores.local, stores.remote) : (stores.remote, stores.local)
            let (file, status, now) = try reader.openForReading(sourceKey)
            defer { file.closeAfterReading() }
            let sent = Self.sending(source, now: now)
            let known = sent.checksums.filter { $0.key.hashAlgorithm != nil }
            let options = UploadOptions(modificationDate: sent.modified, knownChecksums: known, condition: condition)
            if let stored = try writer.storeInline(file, status: status, at: targetKey, options: options) { return (stored, sent) }
        }
        if let store = from.fileStore {
            let (url, now) = try store.fileForReading(sourceKey)
            let sent = Self.sending(source, now: now)
            let known = sent.checksums.filter { $0.key.hashAlgorithm != nil }
            let options = UploadOptions(modificationDate: sent.modified, knownChecksums: known, condition: condition)
            return (try await to.provider.uploadFile(localURL: url, remotePath: targetKey, options: options), sent)
        }
        if let store = to.fileStore {
            let file = try await store.receiveFile(at: targetKey, condition: condition) { url in
                _ = try await from.provider.downloadFile(remotePath: sourceKey, localURL: url, options: read)
            }
            return (file, exact ? source : unverified)
        }
        // Two providers elsewhere: where the destination sends a stream as it reads it, the
        // file goes from one to the other as rclone copies between remotes, writing no
        // temporary file. The stream checks the bytes against the source's size and checksums
        // before it ends, and the destination stores nothing from a stream that ends in an
        // error, so damaged bytes are never committed. The parts in memory come out of the
        // process's upload budget (`UploadMemory`, shared by every transfer running at once),
        // so eight large files to B2 wait for each other's parts instead of holding 3.75 GiB.
        // What a streamed copy gives up: it cannot resume after a failure, and B2 stores no
        // whole-file SHA-1 for a file sent in parts.
        if to.provider.capabilities.supports(.streamingUploads) {
            let stream = try await from.provider.openRead(remotePath: sourceKey, options: read)
            let options = UploadOptions(
                contentType: stream.file.contentType, modificationDate: stream.file.effectiveModificationDate, condition: condition)
            do {
                return (try await to.provider.upload(from: stream.bytes, remotePath: targetKey, options: options), exact ? source : unverified)
            } catch {
                stream.bytes.cancel()  // the source's connection goes now, not when the stream is freed
                throw error
            }
        }
        // Otherwise through a private temporary file.
        return try await TemporaryFile.with { url in
            let downloaded = try await from.provider.downloadFile(remotePath: sourceKey, localURL: url, options: read)
            let options = UploadOptions(
                contentType: downloaded.file.contentType, modificationDate: downloaded.file.effectiveModificationDate, condition: condition)
            return (try await to.provider.uploadFile(localURL: url, remotePath: targetKey, options: options), exact ? source : unverified)
        }
    }

    /// What a copy sends: the listed version with the checksums known for it, if the file
    /// is still that version (the destination then verifies them instead of reading the file
    /// twice), else the version `now` found, with none.
    private static func sending(_ source: SyncEntry, now: RemoteFile) -> SyncEntry {
        guard now.etag != source.etag || now.size != source.size else { return source }
        return SyncEntry(size: now.size, modified: now.modificationDate, etag: now.etag)
    }

    /// Renames `path` to `copy` (or `copy-2`, `copy-3`… when that name is taken) on one
    /// endpoint: natively where the provider moves, else by a copy and a delete of the source
    /// that happens only while the source is still the version expected, so an edit made
    /// meanwhile is never deleted (the copy then stays as an extra file).
    private func relocate(_ path: ObjectKey, to copy: ObjectKey, on endpoint: SyncEndpoint, expected: SyncEntry) async throws -> (ObjectKey, SyncEntry) {
        let provider = endpoint.provider
        var name = copy
        var attempt = 1
        while try await provider.stat(remotePath: endpoint.key(name)) != nil {
            attempt += 1
            guard attempt <= 100, let next = Self.numbered(copy, attempt) else {
                throw BuckiaError(.alreadyExists, "Every conflict copy name is taken; rename some and sync again.", operation: "sync", path: path.rawValue)
            }
            name = next
        }
        return (name, try await relocate(path, exactlyTo: name, on: endpoint, expected: expected, copying: true))
    }

    /// Moves `path` to `name` on one endpoint: natively where the provider moves, else by a
    /// server-side copy (or, when `copying`, a copy through this process) and a delete of the
    /// source that happens only while the source is still the version expected, so an edit
    /// made meanwhile is never deleted (the copy then stays as an extra file).
    private func relocate(_ path: ObjectKey, exactlyTo name: ObjectKey, on endpoint: SyncEndpoint, expected: SyncEntry, copying: Bool) async throws -> SyncEntry {
        let provider = endpoint.provider
        let from = try endpoint.key(path)
        let to = try endpoint.key(name)
        let moved: RemoteFile
        if provider.capabilities.supports(.move) {
            moved = try await provider.moveFile(from: from, to: to)
        } else {
            if provider.capabilities.supports(.serverSideCopy) {
                moved = try await provider.copyFile(from: from, to: to)
            } else {
                guard copying else { throw BuckiaError(.unsupported, "The provider can neither move nor copy files itself.", operation: "sync", path: from.rawValue) }
                moved = try await TemporaryFile.with { url in
                    let read = ReadOptions(ifMatch: provider.capabilities.supports(.conditionalRead) ? expected.etag : nil)
                    let downloaded = try await provider.downloadFile(remotePath: from, localURL: url, options: read)
                    let options = UploadOptions(modificationDate: downloaded.file.effectiveModificationDate, condition: .ifNoneMatch)
                    return try await provider.uploadFile(localURL: url, remotePath: to, options: options)
                }
            }
            guard let current = try await provider.stat(remotePath: from), current.etag == expected.etag, current.size == expected.size else {
                throw BuckiaError(
                    .conditionNotMatch, "The file changed while it was copied to \(name.rawValue), so it was kept as it is; sync again.",
                    operation: "sync", path: from.rawValue)
            }
            try await provider.deleteFile(remotePath: from)
        }
        var entry = SyncEntry(size: moved.size, modified: moved.modificationDate ?? expected.modified, checksums: moved.checksums, etag: moved.etag)
        if moved.size == expected.size, moved.etag == expected.etag || provider.capabilities.supports(.move) {
            entry.checksums.merge(expected.checksums) { current, _ in current }
        }
        return entry
    }

    /// `name.conflict-local-….ext` as `name.conflict-local-…-N.ext`.
    static func numbered(_ copy: ObjectKey, _ number: Int) -> ObjectKey? {
        let text = copy.rawValue
        let nameStart = text.lastIndex(of: "/").map { text.index(after: $0) } ?? text.startIndex
        if let dot = text[nameStart...].lastIndex(of: "."), dot != nameStart, text[nameStart..<dot].contains(".conflict-") {
            return ObjectKey(ifValid: "\(text[..<dot])-\(number)\(text[dot...])")
        }
        return ObjectKey(ifValid: "\(text)-\(number)")
    }

    /// Deletes `path` on one endpoint. A two-way run first checks the file is still the
    /// version it planned with, so an edit made during the run is not deleted.
    private func delete(_ path: ObjectKey, on endpoint: SyncEndpoint, expected: SyncEntry?, action: SyncAction) async throws {
        let key = try endpoint.key(path)
        events(.started(action, bytes: 0))
        if engine.options.mode == .twoWay, let expected {
            guard let current = try await endpoint.provider.stat(remotePath: key) else {
                note(path, nil)
                events(.finished(action, bytes: 0))
                return
            }
            let same = expected.etag.map { current.etag == $0 } ?? (current.size == expected.size)
            guard same && current.size == expected.size else {
                throw BuckiaError(
                    .conditionNotMatch, "The file changed after it was listed, so it was not deleted; sync again to carry the change across.",
                    operation: "delete", path: key.rawValue)
            }
        }
        try await endpoint.provider.deleteFile(remotePath: key)
        note(path, nil)
        events(.finished(action, bytes: 0))
    }
}
