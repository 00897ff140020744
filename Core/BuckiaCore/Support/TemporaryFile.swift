import Foundation

/// Temporary files that are removed when the work that needs them is done.
package enum TemporaryFile {
    /// A fresh, unique URL in the system's temporary directory. Nothing is created.
    package static func makeURL(suffix: String = "") -> URL {
        FileManager.default.temporaryDirectory
            .appendingPathComponent("buckia-\(UUID().uuidString)\(suffix)", isDirectory: false)
    }

    /// Runs `body` with a URL for a temporary file inside a new folder only this user can
    /// open (mode 0700), then removes the folder and whatever is in it.
    ///
    /// The private folder keeps downloaded bytes away from other users of a shared `/tmp`,
    /// whatever mode the file itself is created with. It is one of Buckia's temporaries
    /// (`.buckia-<id>.tmp`, locked while in use), so a folder a killed process left behind is
    /// removed by the next process that makes one.
    package static func with<Result>(_ body: (URL) async throws -> Result) async throws -> Result {
        let parent = FileManager.default.temporaryDirectory
        let handle: DirectoryHandle
        do {
            handle = try DirectoryHandle(path: parent.path)
        } catch {
            throw BuckiaError.wrapping(error, operation: "open temporary folder", path: parent.path)
        }
        if sweptTemporaryDirectory.withLock({ swept in defer { swept = true }; return !swept }) {
            Temporaries.sweep(handle)
        }
        let (name, locked) = try handle.createTemporaryFolder()
        let folder = parent.appendingPathComponent(name, isDirectory: true)
        defer {
            try? handle.removeTree(name)
            Temporaries.unregister(locked.path)
            withExtendedLifetime(locked) {}
        }
        return try await body(folder.appendingPathComponent("file", isDirectory: false))
    }

    /// Whether this process has swept the temporary directory of folders killed runs left.
    private static let sweptTemporaryDirectory = Locked(false)

    /// Writes `data` to a temporary file (mode 0600), runs `body` with it, then removes it.
    package static func with<Result>(data: Data, _ body: (URL) async throws -> Result) async throws -> Result {
        try await with { url in
            try AtomicFile.write(data, to: url, permissions: 0o600)
            return try await body(url)
        }
    }
}
