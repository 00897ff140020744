import Foundation

/// Temporary files that are removed when the work that needs them is done.
public enum TemporaryFile {
    /// A fresh, unique URL in the system's temporary directory. Nothing is created.
    public static func makeURL(suffix: String = "") -> URL {
        FileManager.default.temporaryDirectory
            .appendingPathComponent("buckia-\(UUID().uuidString)\(suffix)", isDirectory: false)
    }

    /// Runs `body` with a URL for a temporary file, then removes whatever is there.
    public static func with<Result>(_ body: (URL) async throws -> Result) async throws -> Result {
        let url = makeURL()
        defer { try? FileManager.default.removeItem(at: url) }
        return try await body(url)
    }

    /// Writes `data` to a temporary file (mode 0600), runs `body` with it, then removes it.
    public static func with<Result>(data: Data, _ body: (URL) async throws -> Result) async throws -> Result {
        try await with { url in
            try AtomicFile.write(data, to: url, permissions: 0o600)
            return try await body(url)
        }
    }
}
