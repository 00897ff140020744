import BuckiaCore
import Foundation

/// Applies a listing's options to entries offered in UTF-8 byte order: the prefix, the resume
/// point (the later of `startAfter` and a resume token), and the one-level roll-up of keys
/// into ``ListEntry/directory(_:)`` entries.
///
/// It keeps its state across pages, so a lister that fills pages from one ordered source
/// pages correctly however the pages fall. The listers in Core use it; a provider that
/// enumerates its keys in order can use it directly.
///
/// ```swift
/// var filter = try ListingFilter(request)
/// for entry in sortedEntries {
///     if let admitted = filter.admit(entry) { page.append(admitted) }
/// }
/// ```
public struct ListingFilter: Sendable {
    /// The options being applied.
    public let options: ListOptions
    private let prefix: [UInt8]
    /// The bytes after which eligible entries begin, if any.
    public let resumeAfter: [UInt8]?
    private var lastDirectory: [UInt8]?

    /// Prepares to filter for `request`; a resume token must be one ``ListingFilter/token(after:)`` made.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` for an invalid prefix; ``BuckiaError/Code/invalidConfiguration``
    ///   for a resume token this filter did not make.
    public init(_ request: ListRequest) throws {
        try ObjectKey.validatePrefix(request.options.prefix)
        options = request.options
        prefix = Array(request.options.prefix.utf8)
        var markers: [[UInt8]] = []
        if let startAfter = request.options.startAfter { markers.append(Array(startAfter.utf8)) }
        if let token = request.resumeToken {
            guard let bytes = ListingFilter.bytes(ofToken: token) else {
                throw BuckiaError(
                    .invalidConfiguration, "The resume token was not made by this kind of listing; start the listing again without it.",
                    operation: "list", path: request.options.prefix)
            }
            markers.append(bytes)
        }
        resumeAfter = markers.max { $0.lexicographicallyPrecedes($1) }
    }

    /// Whether a folder (its full prefix, ending in `/`) can hold an entry this listing
    /// returns; walkers skip the folders for which it is false without reading them.
    public func mayContain(folder: String) -> Bool {
        let bytes = Array(folder.utf8)
        guard bytes.starts(with: prefix) || prefix.starts(with: bytes) else { return false }
        guard let resumeAfter else { return true }
        if resumeAfter.starts(with: bytes) {
            // The resume point is inside the folder. When listing one level and the folder
            // rolls up into one directory entry, that entry has already been returned.
            return options.recursive || !rollsUp(bytes)
        }
        return resumeAfter.lexicographicallyPrecedes(bytes)
    }

    /// Whether a folder's keys roll up into the folder's own directory entry.
    public func rollsUp(folder: String) -> Bool { !options.recursive && rollsUp(Array(folder.utf8)) }

    private func rollsUp(_ folder: [UInt8]) -> Bool {
        folder.count > prefix.count && folder.starts(with: prefix)
            && !folder[prefix.count..<(folder.count - 1)].contains(ListingFilter.slash)
    }

    /// Whether an entry with these bytes is under the prefix and after the resume point, so a
    /// lister can skip describing entries it would drop.
    public func isEligible(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { isEligible($0) }
    }

    /// Whether the entry whose key is `key` is eligible (``isEligible(_:)``), read where the
    /// string holds its bytes.
    package func isEligible(key: String) -> Bool {
        key.utf8.withContiguousStorageIfAvailable { isEligible($0) } ?? isEligible(Array(key.utf8))
    }

    private func isEligible(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count >= prefix.count, prefix.withUnsafeBufferPointer({ ObjectKey.compareBytes($0, UnsafeBufferPointer(rebasing: bytes[..<$0.count])) == 0 })
        else { return false }
        if let resumeAfter { return resumeAfter.withUnsafeBufferPointer { ObjectKey.compareBytes($0, bytes) < 0 } }
        return true
    }

    /// The entry to return for `entry`, which must come after every entry offered before it:
    /// nil when it falls outside the listing or rolls up into a folder already returned.
    public mutating func admit(_ entry: ListEntry) -> ListEntry? {
        let bytes = entry.sortBytes
        guard isEligible(bytes) else { return nil }
        guard !options.recursive, let slash = bytes[prefix.count...].firstIndex(of: ListingFilter.slash) else { return entry }
        let directory = Array(bytes[...slash])
        if directory == lastDirectory { return nil }
        // A folder is listed only if it, too, sorts after the resume point: resuming after
        // "dir/" (a token or a start-after) does not list "dir/" again.
        if let resumeAfter, !resumeAfter.lexicographicallyPrecedes(directory) { return nil }
        lastDirectory = directory
        if let text = String(validating: directory, as: UTF8.self), ObjectKey.isValidPrefix(text) {
            return .directory(text)
        }
        return .unaddressable(UnaddressableKey(bytes: directory, reason: "the folder's name is not a valid key prefix"))
    }

    /// A resume token for the position right after `entry`.
    public static func token(after entry: ListEntry) -> String {
        Base64URL.encode(Data(entry.sortBytes))
    }

    static func bytes(ofToken token: String) -> [UInt8]? {
        Base64URL.decode(token).map(Array.init)
    }

    private static let slash = UInt8(ascii: "/")
}

extension Array where Element == ListEntry {
    /// The entries in UTF-8 byte order of their keys, the order listings return.
    public func sortedByKeyBytes() -> [ListEntry] {
        map { ($0.sortBytes, $0) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }.map(\.1)
    }
}
