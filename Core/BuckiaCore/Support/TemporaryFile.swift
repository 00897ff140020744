import Foundation

/// Temporary files that are removed when the work that needs them is done.
public enum TemporaryFile {
    /// A fresh, unique URL in the system's temporary directory. Nothing is created.
    public static func makeURL(suffix: String = "") -> URL {
        FileManager.default.temporaryDirectory
            .appendingPathComponent("buckia-\(UUID().uuidString)\(suffix)", isDirectory: false)
    }

    /// Runs `body` with a URL for a temporary file inside a new folder only this user can
    /// open (mode 0700), then removes the folder and whatever is in it.
    ///
    /// The private folder keeps downloaded bytes away from other users of a shared `/tmp`,
    /// whatever mode the file itself is created with.
    public static func with<Result>(_ body: (URL) async throws -> Result) async throws -> Result {
        let folder = makeURL()
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw BuckiaError.wrapping(error, operation: "create temporary folder", path: folder.path)
        }
        do {
            try Temporaries.register(folder.path, folder: true)
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
        defer {
            try? FileManager.default.removeItem(at: folder)
            Temporaries.unregister(folder.path)
        }
        return try await body(folder.appendingPathComponent("file", isDirectory: false))
    }

    /// Writes `data` to a temporary file (mode 0600), runs `body` with it, then removes it.
    public static func with<Result>(data: Data, _ body: (URL) async throws -> Result) async throws -> Result {
        try await with { url in
            try AtomicFile.write(data, to: url, permissions: 0o600)
            return try await body(url)
        }
    }
}
