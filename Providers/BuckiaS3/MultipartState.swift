import BuckiaCore
import Foundation

/// What a resumable multipart upload remembers between runs: which upload it was, for which
/// file. Completed parts are not trusted from here; S3's own part list (checked against the
/// local bytes' MD5) decides what is already done.
struct MultipartState: Codable, Sendable {
    var uploadId: String
    var bucket: String
    var key: String
    var size: Int64
    var modified: Double
    var partSize: Int64
    /// The endpoint, the local file and its modification time when the upload began: what
    /// decides, later and from any run, whether the upload can still be resumed. (Absent in
    /// states written before they were recorded.)
    var endpoint: String?
    var localPath: String?
    var fileModified: Double?

    /// The file that holds the state of uploading `localPath` to `key`.
    static func location(directory: URL, endpoint: URL, bucket: String, key: String, localPath: String) -> URL {
        let identity = [endpoint.absoluteString, bucket, key, localPath].joined(separator: "\n")
        return directory.appendingPathComponent(Hashing.sha256Hex(Data(identity.utf8)) + ".json")
    }

    /// The saved state at `url`, if it describes the same file and part size.
    static func load(_ url: URL, matching expected: MultipartState) -> MultipartState? {
        guard let data = try? Data(contentsOf: url), let state = try? JSONValidation.decode(MultipartState.self, from: data, what: "The multipart state") else { return nil }
        guard state.bucket == expected.bucket, state.key == expected.key, state.size == expected.size,
              state.modified == expected.modified, state.partSize == expected.partSize
        else { return nil }
        return state
    }

    /// The state at `url`, whatever it describes.
    static func read(_ url: URL) -> MultipartState? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONValidation.decode(MultipartState.self, from: data, what: "The multipart state")
    }

    /// Every saved state in `directory`, with its file.
    static func all(in directory: URL) -> [(url: URL, state: MultipartState)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.compactMap { name in
            let url = directory.appendingPathComponent(name)
            return read(url).map { (url, $0) }
        }
    }

    /// Whether running the same upload again could resume this one: the local file is still
    /// there, with the size and modification time it had. Nil when the state predates the
    /// fields that tell.
    var canResume: Bool? {
        guard let localPath, let fileModified else { return nil }
        guard let status = try? FileReader(URL(fileURLWithPath: localPath)).status() else { return false }
        return status.size == size && status.modificationDate.timeIntervalSince1970 == fileModified
    }

    /// Removes what a run killed while saving a state left in `directory` (a temporary under
    /// Buckia's name; where files are made without a name first, as on Linux, there is none).
    /// Housekeeping: a folder that cannot be read is left for the save that follows to report.
    static func sweep(_ directory: URL) {
        guard FileManager.default.fileExists(atPath: directory.path) else { return }
        do {
            Temporaries.sweep(try DirectoryHandle(path: directory.path))
        } catch {
            return
        }
    }

    /// Saves the state (mode 0600: an upload id lets its holder add parts).
    func save(_ url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try AtomicFile.write(try JSONEncoder().encode(self), to: url, permissions: 0o600)
    }
}
