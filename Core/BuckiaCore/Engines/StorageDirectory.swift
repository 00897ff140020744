import Foundation

/// Well-known places to keep an engine's files (Bodega's `FileManager.Directory`).
///
/// On Apple platforms these are the system's folders; on Linux they follow the XDG base
/// directory specification: application support is `$XDG_DATA_HOME` (`~/.local/share`),
/// caches `$XDG_CACHE_HOME` (`~/.cache`), documents `$XDG_DOCUMENTS_DIR` or `~/Documents`.
public struct StorageDirectory: Hashable, Sendable {
    /// The folder.
    public let url: URL

    /// Wraps a folder URL.
    public init(url: URL) { self.url = url }

    /// The application-support folder plus `pathComponent`.
    public static func applicationSupport(appendingPath pathComponent: String) -> StorageDirectory {
        StorageDirectory(url: base(.applicationSupportDirectory, xdg: "XDG_DATA_HOME", fallback: ".local/share"), pathComponent)
    }

    /// The caches folder plus `pathComponent`.
    public static func caches(appendingPath pathComponent: String) -> StorageDirectory {
        StorageDirectory(url: base(.cachesDirectory, xdg: "XDG_CACHE_HOME", fallback: ".cache"), pathComponent)
    }

    /// The documents folder plus `pathComponent`.
    public static func documents(appendingPath pathComponent: String) -> StorageDirectory {
        StorageDirectory(url: base(.documentDirectory, xdg: "XDG_DOCUMENTS_DIR", fallback: "Documents"), pathComponent)
    }

    /// The temporary folder plus `pathComponent`.
    public static func temporary(appendingPath pathComponent: String) -> StorageDirectory {
        StorageDirectory(url: FileManager.default.temporaryDirectory, pathComponent)
    }

    /// An app group's shared container plus `pathComponent` on Apple platforms; elsewhere,
    /// where app groups do not exist, a folder named after the group under application support.
    public static func sharedContainer(forAppGroupIdentifier identifier: String, appendingPath pathComponent: String) -> StorageDirectory {
        #if canImport(Darwin)
        if let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: identifier) {
            return StorageDirectory(url: container, pathComponent)
        }
        #endif
        return applicationSupport(appendingPath: "\(identifier)/\(pathComponent)")
    }

    /// Application support on macOS and Linux, documents elsewhere (Bodega's default).
    public static func defaultStorageDirectory(appendingPath pathComponent: String) -> StorageDirectory {
        #if os(macOS) || os(Linux)
        applicationSupport(appendingPath: pathComponent)
        #else
        documents(appendingPath: pathComponent)
        #endif
    }

    private init(url: URL, _ pathComponent: String) {
        self.url = pathComponent.isEmpty ? url : url.appendingPathComponent(pathComponent, isDirectory: true)
    }

    private static func base(_ directory: FileManager.SearchPathDirectory, xdg: String, fallback: String) -> URL {
        #if canImport(Darwin)
        if let url = FileManager.default.urls(for: directory, in: .userDomainMask).first { return url }
        #endif
        let environment = ProcessInfo.processInfo.environment
        if let value = environment[xdg], value.hasPrefix("/") { return URL(fileURLWithPath: value, isDirectory: true) }
        let home = environment["HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) } ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(fallback, isDirectory: true)
    }
}
