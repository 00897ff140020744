import Buckia
import Foundation

/// What a copy did: what it copied, what it found unchanged, what failed, and what it could
/// not address.
struct CopyOutcome: Sendable {
    var copied = 0
    var bytes: Int64 = 0
    var unchanged = 0
    var failures: [(path: String, error: BuckiaError)] = []
    var unaddressable: [UnaddressableKey] = []
}

/// When a copy replaces what the destination already holds.
enum CopyPolicy: Sendable {
    /// Skip a destination with the same size and modification time (to the second), as
    /// `rclone copy` does: a rerun redoes only what changed or failed.
    case skipUnchanged
    /// Skip any destination that exists (`--ignore-existing`).
    case skipExisting
    /// Copy everything (`--ignore-times`).
    case copyAll
}

/// Copies between any two locations: local↔remote, remote↔remote, local↔local.
struct Copier: Sendable {
    enum Endpoint: Sendable {
        case local(URL)
        case remote(any StorageProvider, name: String, path: String, concurrency: Int)
    }

    let source: Endpoint
    let destination: Endpoint
    let destinationIsFolder: Bool
    let policy: CopyPolicy
    /// The live progress line, on a terminal.
    var display: ProgressDisplay?
    /// Local folders already swept of temporaries a killed run left there.
    private let swept = Locked<Set<String>>([])

    /// Removes abandoned Buckia temporaries from a local destination folder, once per run.
    private func sweep(_ folder: URL) {
        guard swept.withLock({ $0.insert(folder.path).inserted }), let handle = try? DirectoryHandle(path: folder.path) else { return }
        Temporaries.sweep(handle)
    }

    init(invocation: Invocation, source: Location, destination: Location, policy: CopyPolicy = .skipUnchanged) throws {
        self.policy = policy
        func endpoint(_ location: Location) throws -> Endpoint {
            switch location {
            case .local(let url): return .local(url)
            case .remote(let name, let path):
                let (provider, configuration) = try invocation.provider(named: name)
                return .remote(provider, name: name, path: path, concurrency: configuration.maxConcurrentOperations)
            }
        }
        self.source = try endpoint(source)
        self.destination = try endpoint(destination)
        let raw = invocation.positionals[1]
        switch self.destination {
        case .local(let url):
            var isDirectory: ObjCBool = false
            destinationIsFolder = raw.hasSuffix("/") || (FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue)
        case .remote(_, _, let path, _):
            destinationIsFolder = path.isEmpty || path.hasSuffix("/")
        }
    }

    /// Copies one file, unless the destination already holds it (per ``policy``).
    func copyOne() async throws -> CopyOutcome {
        let name: String
        switch source {
        case .local(let url):
            let isDirectory = try Copier.isFolder(url, what: "file")
            if isDirectory { throw UsageError(description: "\(url.path) is a folder; use -r to copy folders.") }
            let type = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.type] as? FileAttributeType
            guard type == .typeRegular || type == .typeSymbolicLink else {
                throw UsageError(description: "\(url.path) is not a regular file (a device, pipe or socket); only files are copied.")
            }
            name = url.lastPathComponent
        case .remote(_, _, let path, _):
            name = path.trimmedSlashes.split(separator: "/").last.map(String.init) ?? ""
        }
        let target = try destinationIsFolder ? destinationPath(appending: name) : destinationPath(appending: nil)
        let from = try sourcePath(appending: nil)
        var outcome = CopyOutcome()
        if try await isUnchanged(from, target) {
            outcome.unchanged = 1
        } else {
            display?.expect(files: 1, bytes: try await describe(from)?.size ?? 0)
            outcome.bytes = try await copy(from, to: target, shown: try ObjectKey(name.isEmpty ? "file" : name))
            outcome.copied = 1
        }
        display?.finish()
        return outcome
    }

    /// Copies everything under the source folder into the destination folder. A file that
    /// fails does not stop the others: every failure is in the outcome, and the command
    /// reports them all at the end.
    func copyTree() async throws -> CopyOutcome {
        var relatives: [String] = []
        var unaddressable: [UnaddressableKey] = []
        switch source {
        case .local(let root):
            guard try Copier.isFolder(root, what: "folder") else { throw UsageError(description: "\(root.path) is a file; drop -r to copy one file.") }
            var skipped: [String] = []
            try Copier.walk(DirectoryHandle(path: root.path), prefix: "", files: &relatives, skipped: &skipped, unnamed: &unaddressable)
            for path in skipped {
                Console.error("buckia: skipped \(path): symbolic links and special files are not copied.")
            }
        case .remote(let provider, let name, let path, _):
            let prefix = path.folderPrefix
            for try await entry in provider.list(ListOptions(prefix: prefix)) {
                if let file = entry.file, let relative = file.path.dropping(prefix: prefix) { relatives.append(relative) }
                if let key = entry.unaddressable { unaddressable.append(key) }
            }
            if relatives.isEmpty && unaddressable.isEmpty {
                if !path.trimmedSlashes.isEmpty, try await provider.stat(remotePath: path.trimmedSlashes) != nil {
                    throw UsageError(description: "\(name):\(path) is an object; drop -r to copy one object.")
                }
                throw BuckiaError(.notFound, "Nothing exists under \(name):\(prefix).", path: prefix)
            }
        }
        let width = [source, destination].map { endpoint -> Int in
            if case .remote(_, _, _, let concurrency) = endpoint { return concurrency }
            return 4
        }.min() ?? 4
        let outcome = Locked(CopyOutcome())
        outcome.withLock { $0.unaddressable = unaddressable }
        display?.expect(files: relatives.count, bytes: 0)
        defer { display?.finish() }
        try await forEachConcurrently(relatives.sorted(), width: width) { relative in
            do {
                if case .local(let root) = destination { try Copier.makeFolders(under: root, for: relative) }
                let from = try sourcePath(appending: relative, asFolder: true)
                let to = try destinationPath(appending: relative, asFolder: true)
                if try await isUnchanged(from, to) {
                    outcome.withLock { $0.unchanged += 1 }
                    display?.finished(try ObjectKey(relative), bytes: 0)
                    return
                }
                let bytes = try await copy(from, to: to, shown: try ObjectKey(relative))
                outcome.withLock {
                    $0.copied += 1
                    $0.bytes += bytes
                }
            } catch {
                let wrapped = BuckiaError.wrapping(error, path: relative)
                // Cancellation (an interrupt) ends the whole copy; anything else is one file's failure.
                if wrapped.code == .cancelled { throw wrapped }
                outcome.withLock { $0.failures.append((relative, wrapped)) }
                if let key = ObjectKey(ifValid: relative) { display?.finished(key, bytes: 0, failed: true) }
            }
        }
        return outcome.withLock { $0 }
    }

    /// Whether the local source at `url` is a folder (links followed).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/notFound`` when nothing is there; the reason
    ///   otherwise (a link loop, a folder on the way that may not be searched), never "does not
    ///   exist" for a path that does.
    static func isFolder(_ url: URL, what: String) throws -> Bool {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            let code = errno
            if code == ENOENT {
                throw BuckiaError(.notFound, "The local \(what) \(url.path) does not exist.", path: url.path)
            }
            throw BuckiaError.posix(code, operation: "open", path: url.path)
        }
        return (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether the destination already holds what the source holds, per ``policy``: the same
    /// size and a modification time within a second (the coarsest precision any built-in
    /// keeps), or for `--ignore-existing` merely something.
    private func isUnchanged(_ from: Resolved, _ to: Resolved) async throws -> Bool {
        guard policy != .copyAll, let target = try await describe(to) else { return false }
        if policy == .skipExisting { return true }
        guard let origin = try await describe(from), origin.size == target.size,
              let a = origin.modified, let b = target.modified
        else { return false }
        return abs(a.timeIntervalSince(b)) < 1
    }

    /// The size and modification time at a location, or nil when nothing is there.
    func describe(_ location: Resolved) async throws -> (size: Int64, modified: Date?)? {
        switch location {
        case .local(let url):
            var info = stat()
            guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
            return (Int64(info.st_size), LocalFile.modificationDate(of: info))
        case .remote(let provider, let key):
            guard let file = try await provider.stat(remotePath: key) else { return nil }
            try provider.capabilities.checkSize(of: file, operation: "cp")
            return (file.size, file.effectiveModificationDate)
        }
    }

    /// Creates the folders of `relative` (a path from the source tree, which a remote
    /// controls) under the destination `root`, walking from `root` without following links,
    /// so a link planted in the destination cannot send a copy outside it: the same rule the
    /// local provider keeps for its root.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidPath`` naming the link.
    static func makeFolders(under root: URL, for relative: String) throws {
        try LocalFile.createDirectories(root.path)
        var handle = try DirectoryHandle(path: root.path)
        for segment in relative.split(separator: "/").dropLast() {
            handle = try handle.folder(String(segment), create: true)
        }
    }

    /// Collects the regular files under `folder` (relative paths), without following links;
    /// links and special files go to `skipped`, names that are not UTF-8 to `unnamed`.
    static func walk(
        _ folder: DirectoryHandle, prefix: String, files: inout [String], skipped: inout [String], unnamed: inout [UnaddressableKey]
    ) throws {
        for (raw, kind) in try folder.rawNames().sorted(by: { $0.name.lexicographicallyPrecedes($1.name) }) {
            // Buckia's own temporaries (a download in progress, or one a killed run left) are
            // never copied.
            if kind == .file && Temporaries.isTemporaryName(raw) { continue }
            guard let name = String(validating: raw, as: UTF8.self) else {
                unnamed.append(UnaddressableKey(bytes: Array((prefix).utf8) + raw, reason: "the name is not UTF-8, so it cannot be a key"))
                continue
            }
            switch kind {
            case .file: files.append(prefix + name)
            case .folder:
                try walk(folder.folder(name, create: false), prefix: prefix + name + "/", files: &files, skipped: &skipped, unnamed: &unnamed)
            default: skipped.append(prefix + name)
            }
        }
    }

    enum Resolved: Sendable {
        case local(URL)
        case remote(any StorageProvider, ObjectKey)
    }

    private func sourcePath(appending relative: String?, asFolder: Bool = false) throws -> Resolved {
        try resolve(source, appending: relative, asFolder: asFolder)
    }

    private func destinationPath(appending relative: String?, asFolder: Bool = false) throws -> Resolved {
        try resolve(destination, appending: relative, asFolder: asFolder || relative != nil)
    }

    private func resolve(_ endpoint: Endpoint, appending relative: String?, asFolder: Bool) throws -> Resolved {
        switch endpoint {
        case .local(let url):
            guard let relative else { return .local(url) }
            return .local(url.appendingPathComponent(relative))
        case .remote(let provider, _, let path, _):
            let key = asFolder ? path.folderPrefix + (relative ?? "") : path.trimmedSlashes
            return .remote(provider, try ObjectKey(key))
        }
    }

    /// Copies one file, showing its bytes on the progress line as `shown`.
    private func copy(_ from: Resolved, to: Resolved, shown: ObjectKey) async throws -> Int64 {
        guard let display else { return try await copy(from, to: to) }
        display.started(shown, size: nil)
        let bytes = try await TransferProgress.$observer.withValue(TransferObserver { display.moved(shown, bytes: $0) }) {
            try await copy(from, to: to)
        }
        display.finished(shown, bytes: bytes)
        return bytes
    }

    private func copy(_ from: Resolved, to: Resolved) async throws -> Int64 {
        switch (from, to) {
        case (.local(let source), .remote(let provider, let key)):
            return try await provider.uploadFile(localURL: source, remotePath: key, options: UploadOptions()).size
        case (.remote(let provider, let key), .local(let target)):
            // A device or FIFO there is refused before anything is downloaded.
            try LocalFile.checkReplaceable(target.path)
            try LocalFile.createDirectories(target.deletingLastPathComponent().path)
            sweep(target.deletingLastPathComponent())
            return try await provider.downloadFile(remotePath: key, localURL: target).file.size
        case (.remote(let sourceProvider, let sourceKey), .remote(let targetProvider, let targetKey)):
            return try await TemporaryFile.with { url in
                let downloaded = try await sourceProvider.downloadFile(remotePath: sourceKey, localURL: url)
                let options = UploadOptions(contentType: downloaded.file.contentType, modificationDate: downloaded.file.effectiveModificationDate)
                return try await targetProvider.uploadFile(localURL: url, remotePath: targetKey, options: options).size
            }
        case (.local(let source), .local(let target)):
            try LocalFile.createDirectories(target.deletingLastPathComponent().path)
            let input = try LocalFile.openForReading(source)
            let modified = try input.status().modificationDate
            try input.close()
            return try AtomicFile.copy(from: source, to: target, options: AtomicFile.Options(modificationDate: modified))
        }
    }
}
