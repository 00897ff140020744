import BuckiaCore
import BuckiaLocal
import BuckiaSync
import Foundation

/// The rename check, for any destination: a local folder of `count` small files is
/// pushed (with deletes), the folder is renamed with `rename(2)`, and pushed again. What the
/// server saw between the two pushes is for the caller to count.
public struct RenamedFolderRun: Sendable {
    /// The second push's result.
    public let result: SyncResult
    /// The keys the destination lists afterwards under `prefix`.
    public let keys: Set<String>
    /// The files' bytes by their new relative path.
    public let files: [String: Data]

    /// Runs it. `between` is called after the first push and before the renamed folder is
    /// pushed (to note the server's counters); the destination is listed under `prefix` (a folder name, no trailing slash).
    public static func run(
        to destination: any StorageProvider, prefix: String, count: Int, between: @Sendable () async throws -> Void
    ) async throws -> RenamedFolderRun {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-renamed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let tree = work.appendingPathComponent("tree")
        let album = tree.appendingPathComponent("album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        var files: [String: Data] = [:]
        for n in 0..<count {
            var random = RandomBytes(seed: UInt64(n) + 1)
            var noise = [UInt8](repeating: 0, count: 1024)
            random.fill(&noise)
            let data = Data("file \(n) ".utf8) + Data(noise)
            try data.write(to: album.appendingPathComponent(String(format: "%04d.bin", n)))
            files[String(format: "photos/2026/%04d.bin", n)] = data
        }
        let local = try SyncEndpoint(provider: LocalProvider(root: tree), backend: "local:\(tree.path)")
        let remote = try SyncEndpoint(provider: destination, path: prefix, backend: "destination")
        let options = SyncOptions(mode: .push, deleteExtraneous: true)
        let state = work.appendingPathComponent("state.sqlite")
        func push() async throws -> SyncResult {
            let store = try SyncStateStore(url: state)
            defer { store.close() }
            return try await SyncEngine(local: local, remote: remote, options: options, stateStore: store).run()
        }
        let first = try await push()
        guard first.isComplete, first.uploaded == count else {
            throw BuckiaError(.io, "The first push uploaded \(first.uploaded) of \(count) files: \(first.failures.prefix(3))")
        }
        try await between()
        try FileManager.default.createDirectory(at: tree.appendingPathComponent("photos"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: album, to: tree.appendingPathComponent("photos/2026"))
        let second = try await push()
        let keys = Set(try await destination.listFiles(path: prefix).map { String($0.path.rawValue.dropFirst(prefix.count + 1)) })
        return RenamedFolderRun(result: second, keys: keys, files: files)
    }
}
