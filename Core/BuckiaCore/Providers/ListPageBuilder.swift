/// Builds listing pages from keys offered in UTF-8 order, for providers that can enumerate
/// their keys sorted (in-memory maps, directory walks, databases).
///
/// It applies the prefix, `startAfter`, the continuation token, one-level roll-up into
/// ``ListEntry/directory(_:)`` entries and the page size, so every such provider pages the
/// same way. The continuation token is the last path returned; when that path is a folder,
/// the next page skips everything under it.
///
/// ```swift
/// var builder = ListPageBuilder(request: request, maxPageSize: 1000)
/// for file in sortedFiles(after: builder.resumeAfter) {
///     if !builder.offer(file) { break }
/// }
/// return builder.page()
/// ```
public struct ListPageBuilder: Sendable {
    private let options: ListOptions
    private let pageSize: Int
    private var entries: [ListEntry] = []
    private var lastDirectory: String?
    private var hasMore = false

    /// The key after which eligible objects begin: the later of `startAfter` and the
    /// continuation token. Providers may seek straight to it.
    public let resumeAfter: String?

    /// Prepares a page for `request`, never larger than `maxPageSize`.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` for an invalid prefix.
    public init(request: ListRequest, maxPageSize: Int) throws {
        try ObjectKey.validatePrefix(request.options.prefix)
        options = request.options
        pageSize = max(1, min(request.options.pageSize ?? maxPageSize, maxPageSize))
        let markers = [request.options.startAfter, request.continuation].compactMap { $0 }
        resumeAfter = markers.max { $0.utf8Precedes($1) }
    }

    /// Offers the next object in UTF-8 order.
    ///
    /// - Returns: false once the page is full and another eligible entry is known to exist:
    ///   stop offering then.
    public mutating func offer(_ file: RemoteFile) -> Bool {
        let path = file.path
        guard path.hasPrefix(options.prefix) else { return true }
        if let resumeAfter, !resumeAfter.utf8Precedes(path) { return true }
        let entry: ListEntry
        if !options.recursive, let slash = path.utf8.dropFirst(options.prefix.utf8.count).firstIndex(of: UInt8(ascii: "/")) {
            let directory = String(path[...slash])
            // A folder is listed only if it, too, sorts after the resume point: a continuation
            // that ended on "dir/" (or a start-after of "dir/") does not list "dir/" again.
            if directory == lastDirectory { return true }
            if let resumeAfter, !resumeAfter.utf8Precedes(directory) { return true }
            entry = .directory(directory)
        } else {
            entry = .object(file)
        }
        if entries.count == pageSize {
            hasMore = true
            return false
        }
        if case .directory(let directory) = entry { lastDirectory = directory }
        entries.append(entry)
        return true
    }

    /// The finished page; its continuation is set only when more entries exist.
    public func page() -> ListPage {
        ListPage(entries: entries, continuation: hasMore ? entries.last?.path : nil)
    }
}
