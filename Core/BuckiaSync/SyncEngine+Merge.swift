import BuckiaCore
import Foundation

extension SyncEngine {
    /// What one side lists, as the merge reads it: the selected files in key order, paths
    /// relative to the endpoint, and the keys the side cannot address.
    ///
    /// Streaming, it holds one page and fetches the next in a task of its own while the merge
    /// works (so both sides are listed at once, as before); the merge keeps only the entries
    /// of paths that need planning, so a resync of many unchanged files holds none of them.
    /// A side that lists out of key order stops the stream with ``OutOfOrder``, and the run
    /// lists it again whole and sorted (``init(sorted:)``).
    final class SideReader {
        /// One listed item, converted where the page was fetched.
        enum Item: Sendable {
            case file(ObjectKey, SyncEntry)
            case unaddressable(UnaddressableKey)
        }

        /// The side listed a key after a later one: it cannot be merged as a stream.
        struct OutOfOrder: Error {}

        private typealias Fetch = Task<(items: [Item], rest: RemoteListing.Pages.Iterator?), any Error>

        private let prefix: String
        /// What a streamed side selects (nil when it was listed whole).
        private let selection: SyncOptions?
        private var items: [Item]
        private var index = 0
        private var pending: Fetch?
        private var last: ObjectKey?
        /// How many selected files were taken: all of them, once the merge is done.
        private(set) var count = 0
        /// Keys the side holds but cannot address, as listed.
        private(set) var unaddressable: [UnaddressableKey] = []
        /// The same keys relative to the endpoint: a path at or under one (a symbolic link in
        /// place of a file or folder) is hidden on this side, unknown rather than absent.
        private var hidden: Set<String> = []
        /// Keys that end in `/` (an S3 console's folder marker `photos/`), relative and less
        /// that one `/`: paths under one are hidden on this side, the path itself is not. So
        /// every hiding key sorts at or before each path it hides, and the merge, which has
        /// read a side up to the path it decides, has always read them in time. (`photos/`
        /// sorts after `photos.txt`, so it could not hide `photos` without reading ahead.)
        private var hiddenFolders: Set<String> = []

        /// Streams `endpoint`'s listing, filtered as `options` say.
        init(streaming endpoint: SyncEndpoint, options: SyncOptions) {
            prefix = endpoint.prefix
            selection = options
            items = []
            let pages = endpoint.provider.list(ListOptions(prefix: endpoint.prefix)).pages.makeAsyncIterator()
            pending = Self.fetch(pages, prefix: endpoint.prefix, options: options)
        }

        /// Reads a listing already whole and sorted (a side that lists out of order).
        init(sorted listing: Listing, prefix: String) {
            self.prefix = prefix
            selection = nil
            items = listing.entries.map { .file($0.path, $0.entry) }
            for key in listing.unaddressable { record(key) }
        }

        deinit { pending?.cancel() }

        /// Fetches one page and converts it, off the merge's task.
        private static func fetch(_ pages: RemoteListing.Pages.Iterator, prefix: String, options: SyncOptions) -> Fetch {
            Task {
                var pages = pages
                guard let page = try await pages.next() else { return ([], nil) }
                var items: [Item] = []
                items.reserveCapacity(page.entries.count)
                for entry in page.entries {
                    if let item = item(entry, prefix: prefix, options: options) { items.append(item) }
                }
                return (items, pages)
            }
        }

        /// A listed entry as the merge reads it, its path relative to the endpoint's `prefix`;
        /// nil for a folder, a key outside the prefix, or a file the filter leaves out.
        static func item(_ entry: ListEntry, prefix: String, options: SyncOptions) -> Item? {
            switch entry {
            case .object(let file):
                guard file.path.hasPrefix(prefix) else { return nil }
                // The endpoint's prefix ends a segment, so what follows it in a valid key is one.
                guard let path = file.path.relative(to: prefix) else {
                    // The folder's own marker (`prefix/`) and the like: held, but not a path.
                    return .unaddressable(UnaddressableKey(bytes: Array(file.path.rawValue.utf8), reason: "it names no file inside the synced folder"))
                }
                guard options.takesPart(path) else { return nil }
                return .file(path, SyncEntry(size: file.size, modified: file.modificationDate, checksums: file.checksums, etag: file.etag))
            case .unaddressable(let key):
                return .unaddressable(key)
            case .directory:
                return nil
            }
        }

        /// The next file's path, or nil once the side is exhausted. Every unaddressable key
        /// listed before it has been recorded by then: a key that hides a path sorts at or
        /// before it.
        ///
        /// - Throws: ``OutOfOrder``; what listing the side throws; `cancelled`.
        func peek() async throws -> ObjectKey? {
            while true {
                while index < items.count {
                    switch items[index] {
                    case .file(let path, _):
                        if let last, !(last < path) { throw OutOfOrder() }
                        return path
                    case .unaddressable(let key):
                        record(key)
                        index += 1
                    }
                }
                guard let fetch = pending else { return nil }
                let (page, rest) = try await withTaskCancellationHandler {
                    try await fetch.value
                } onCancel: {
                    fetch.cancel()
                }
                // The page is read; the next one is fetched while the merge works through it.
                (items, index) = (page, 0)
                if let rest, let selection {
                    pending = Self.fetch(rest, prefix: prefix, options: selection)
                } else {
                    pending = nil
                }
            }
        }

        /// Takes the file `peek()` returned, if it is at `path`.
        func take(_ path: ObjectKey) -> Optional<SyncEntry> {
            guard index < items.count, case .file(let listed, let entry) = items[index], listed == path else { return nil }
            index += 1
            count += 1
            last = listed
            return entry
        }

        /// Whether `path` may be held here unseen: it, or a folder above it, is a key this
        /// side cannot address.
        func hides(_ path: ObjectKey) -> Bool {
            guard !hidden.isEmpty || !hiddenFolders.isEmpty else { return false }
            if hidden.contains(path.rawValue) { return true }
            var prefix = path.rawValue[...]
            while let slash = prefix.lastIndex(of: "/") {
                prefix = prefix[..<slash]
                let folder = String(prefix)
                if hidden.contains(folder) || hiddenFolders.contains(folder) { return true }
            }
            return false
        }

        /// Stops the page fetch in flight, if any (a side about to be listed again whole).
        func cancel() {
            pending?.cancel()
            pending = nil
        }

        private func record(_ key: UnaddressableKey) {
            unaddressable.append(key)
            guard key.bytes.starts(with: prefix.utf8) else { return }
            var relative = Array(key.bytes.dropFirst(prefix.utf8.count))
            if relative.last == UInt8(ascii: "/") {
                relative.removeLast()
                hiddenFolders.insert(String(decoding: relative, as: UTF8.self))
            } else {
                hidden.insert(String(decoding: relative, as: UTF8.self))
            }
        }
    }

    /// The merge's result: one row per path that needs planning, indexing the entries kept
    /// for it (only those: an unchanged path keeps nothing).
    struct Merged {
        var rows: [Row] = []
        var local: [(path: ObjectKey, entry: SyncEntry)] = []
        var remote: [(path: ObjectKey, entry: SyncEntry)] = []
        var baseline: [(path: ObjectKey, baseline: SyncBaseline)] = []
        /// Paths both of whose sides are still the versions the baseline recorded.
        var unchanged = 0
    }

    /// Lines up the two sides and the baseline, all in key order: one row per path that
    /// needs planning. A path both of whose sides are still the versions the baseline
    /// recorded needs nothing and gets no row. The baseline is read a page at a time
    /// (`baselines`: the page after a stored path, nil with no store), as the sides are.
    ///
    /// Baselines of paths the filter leaves out are skipped (they stay in the store), and so
    /// is every path a side cannot show because a key it cannot address stands there or above
    /// it (a folder replaced by a symbolic link): what cannot be seen is unknown, not deleted.
    ///
    /// With `batch`, each time that many rows are kept they go to `onBatch`, which plans and
    /// performs them and leaves `merged` empty; what is left at the end is returned.
    static func merge(
        _ local: SideReader, _ remote: SideReader, selects: (ObjectKey) -> Bool,
        baselines: (String?) throws -> (page: [(path: ObjectKey, baseline: SyncBaseline)], last: String?)?,
        batch: Int? = nil, onBatch: (inout Merged) async throws -> Void = { _ in }
    ) async throws -> Merged {
        var merged = Merged()
        /// Hands a full batch over.
        func handOver() async throws {
            if let batch, merged.rows.count >= batch { try await onBatch(&merged) }
        }
        /// A row for `path` with the entries it needs, kept.
        func row(_ path: ObjectKey, _ mine: Optional<SyncEntry>, _ theirs: Optional<SyncEntry>) -> Row {
            var row = Row(local: -1, remote: -1, baseline: -1)
            if let mine {
                row.local = Int32(merged.local.count)
                merged.local.append((path, mine))
            }
            if let theirs {
                row.remote = Int32(merged.remote.count)
                merged.remote.append((path, theirs))
            }
            return row
        }
        /// Whether a side the path is missing from may hold it unseen.
        func hidden(_ path: ObjectKey, _ mine: Optional<SyncEntry>, _ theirs: Optional<SyncEntry>) -> Bool {
            (mine == nil && local.hides(path)) || (theirs == nil && remote.hides(path))
        }
        /// Makes rows for listed paths before `limit` (all of them when nil). Both sides are
        /// left peeked at or past `limit`, with every key that could hide it recorded.
        func drain(before limit: ObjectKey?) async throws {
            while true {
                var next = try await local.peek()
                if let theirs = try await remote.peek(), next.map({ theirs < $0 }) ?? true { next = theirs }
                guard let path = next, limit.map({ path < $0 }) ?? true else { return }
                let (mine, theirs) = (local.take(path), remote.take(path))
                if hidden(path, mine, theirs) { continue }
                merged.rows.append(row(path, mine, theirs))
                try await handOver()
            }
        }
        var previous: ObjectKey?
        var after: String?
        while let (page, last) = try baselines(after) {
            for (path, old) in page {
                // The store returns keys in order; a repeated or backwards key is skipped.
                if let previous, !(previous < path) { continue }
                previous = path
                try await drain(before: path)
                guard selects(path) else { continue }
                let (mine, theirs) = (local.take(path), remote.take(path))
                if let mine, let theirs, mine.isSameVersion(as: old.local), theirs.isSameVersion(as: old.remote) {
                    merged.unchanged += 1
                    continue
                }
                if hidden(path, mine, theirs) { continue }
                var kept = row(path, mine, theirs)
                kept.baseline = Int32(merged.baseline.count)
                merged.baseline.append((path, old))
                merged.rows.append(kept)
                try await handOver()
            }
            // Each page ends further on, by bytes, unless a stored path does not read back as
            // itself (a BLOB, or bytes that are not UTF-8, in a damaged store): then the same
            // rows would come back page after page. The rest of the store is left unread, which
            // costs those paths a fresh comparison, never a loop.
            guard let last, after.map({ $0.utf8.lexicographicallyPrecedes(last.utf8) }) ?? true else { break }
            after = last
            try Task.checkCancellation()
        }
        try await drain(before: nil)
        return merged
    }
}
