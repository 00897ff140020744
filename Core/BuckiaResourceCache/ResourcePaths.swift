import BuckiaCore
import Foundation

/// Where in the cache folder an entry's file goes, and what it is called: the seed's
/// `StoragePathProvider` and file naming in one, since a path is a folder and a name.
///
/// What a provider returns is checked before anything is written (relative, no empty, `.` or
/// `..` component, each component at most 255 bytes); a path that fails is an error, never a
/// file written somewhere else.
public protocol StoragePathProvider: Sendable {
    /// The path, relative to the cache folder, of the resource at `location` whose
    /// identifier is `identifier`, stored with the transform's file extension `fileExtension`
    /// (empty for none) at `storedAt`, `size` bytes as stored.
    func path(for location: ResourceLocation, identifier: String, fileExtension: String, storedAt: Date, size: Int64) -> String
}

/// The seed's default: every file at the top of the folder, named `{identifier}_{filename}`
/// (the location's last component, made safe and cut to fit), with the transform's extension.
public struct FlatStoragePathProvider: StoragePathProvider {
    public init() {}
    public func path(for location: ResourceLocation, identifier: String, fileExtension: String, storedAt: Date, size: Int64) -> String {
        ResourceNames.fileName(identifier: identifier, original: location.lastComponent, fileExtension: fileExtension)
    }
}

/// `{host}/{identifier}.{extension}`: one folder per origin, the seed's hierarchical example.
public struct DomainStoragePathProvider: StoragePathProvider {
    public init() {}
    public func path(for location: ResourceLocation, identifier: String, fileExtension: String, storedAt: Date, size: Int64) -> String {
        ResourceNames.component(location.origin) + "/" + ResourceNames.fileName(identifier: identifier, original: "", fileExtension: fileExtension)
    }
}

/// `{yyyy}/{MM}/{dd}/{identifier}.{extension}` by the day the entry was stored (UTC).
public struct DateStoragePathProvider: StoragePathProvider {
    public init() {}
    public func path(for location: ResourceLocation, identifier: String, fileExtension: String, storedAt: Date, size: Int64) -> String {
        let parts = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC") ?? .current, from: storedAt)
        let day = String(format: "%04d/%02d/%02d", parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
        return day + "/" + ResourceNames.fileName(identifier: identifier, original: "", fileExtension: fileExtension)
    }
}

/// `{category}/{identifier}.{extension}`, the category chosen by a closure (avatars, thumbnails,
/// by size class: whatever the app knows about the location).
public struct CategoryStoragePathProvider: StoragePathProvider {
    let category: @Sendable (ResourceLocation) -> String

    public init(category: @escaping @Sendable (ResourceLocation) -> String) {
        self.category = category
    }

    public func path(for location: ResourceLocation, identifier: String, fileExtension: String, storedAt: Date, size: Int64) -> String {
        ResourceNames.component(category(location)) + "/" + ResourceNames.fileName(identifier: identifier, original: "", fileExtension: fileExtension)
    }
}

/// `{class}/{identifier}.{extension}` by the stored size: `small`, `medium` or `large` (the
/// seed's `large/abc123.png`), so an app can clear or measure one class on its own. A
/// resource stored again at another size moves, and its old file goes.
public struct SizeStoragePathProvider: StoragePathProvider {
    /// Below this many bytes: `small`.
    public let mediumFrom: Int64
    /// From this many bytes: `large`.
    public let largeFrom: Int64

    /// - Parameters:
    ///   - mediumFrom: The smallest `medium` size (100 KiB by default).
    ///   - largeFrom: The smallest `large` size (1 MiB by default).
    public init(mediumFrom: Int64 = 100 << 10, largeFrom: Int64 = 1 << 20) {
        self.mediumFrom = mediumFrom
        self.largeFrom = largeFrom
    }

    public func path(for location: ResourceLocation, identifier: String, fileExtension: String, storedAt: Date, size: Int64) -> String {
        let sizeClass = size >= largeFrom ? "large" : size >= mediumFrom ? "medium" : "small"
        return sizeClass + "/" + ResourceNames.fileName(identifier: identifier, original: "", fileExtension: fileExtension)
    }
}

/// Turning text from a location into safe path components.
enum ResourceNames {
    /// Longest component: file systems allow 255 bytes.
    static let limit = 255

    /// `{identifier}_{original}.{extension}`, the original made safe and cut so the whole
    /// name fits in 255 bytes; `{identifier}.{extension}` without an original.
    static func fileName(identifier: String, original: String, fileExtension: String) -> String {
        let suffix = fileExtension.isEmpty ? "" : "." + component(fileExtension)
        var name = identifier
        let safe = component(original)
        if !original.isEmpty, safe != "_" {
            let room = limit - name.utf8.count - 1 - suffix.utf8.count
            if room > 0 { name += "_" + prefix(safe, bytes: room) }
        }
        return name + suffix
    }

    /// `text` as one path component: `/`, NUL and control characters replaced by `_`, `.` and
    /// `..` (and empty) made `_`, cut to 255 bytes on a character boundary.
    static func component(_ text: String) -> String {
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar == "/" || scalar == "\\" || scalar.value < 0x20 || scalar.value == 0x7F ? "_" : scalar
        }))
        if cleaned.isEmpty || cleaned == "." || cleaned == ".." { return "_" }
        return prefix(cleaned, bytes: limit)
    }

    /// The longest prefix of `text` of at most `bytes` UTF-8 bytes, ending on a character.
    static func prefix(_ text: String, bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var result = ""
        var count = 0
        for character in text {
            let size = character.utf8.count
            guard count + size <= bytes else { break }
            result.append(character)
            count += size
        }
        return result
    }

    /// Throws unless `path` is relative and every component is a plain name of at most 255
    /// bytes: a custom provider's path is checked before anything is written there.
    static func check(_ path: String) throws -> [String] {
        let refuse = { (why: String) in
            BuckiaError(.invalidPath, "The cache path \(path.debugDescription) \(why); a path provider must give a relative path of plain names.", operation: "cache path")
        }
        guard !path.isEmpty, !path.hasPrefix("/"), !path.utf8.contains(0) else { throw refuse("is empty, absolute or holds NUL") }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        for part in parts where part.isEmpty || part == "." || part == ".." || part.utf8.count > limit || part.hasPrefix(".buckia") {
            throw refuse("has an empty, `.` or `..` component, one over 255 bytes, or one Buckia reserves (.buckia…)")
        }
        return parts
    }
}
