import Foundation

/// Folders a test makes under the temporary folder, and their removal.
public enum TestFolder {
    /// A new, empty folder named `prefix-UUID` under the temporary folder.
    public static func make(_ prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Removes a folder a test made. One already gone is fine; any other failure is written to
    /// standard error, never silenced.
    public static func remove(_ url: URL) {
        do {
            try FileManager.default.removeItem(at: url)
        } catch let error as CocoaError where error.code == .fileNoSuchFile {
            return
        } catch {
            FileHandle.standardError.write(Data("buckia tests: \(url.path) could not be removed: \(error)\n".utf8))
        }
    }
}
