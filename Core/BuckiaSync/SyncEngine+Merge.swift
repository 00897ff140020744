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
    /// lists it again whole and sorted (``init(sorted:prefix:)``).
    ///
    /// A page crosses from the task that fetched it to the merge packed (``Page``): every path
    /// and entity tag in one byte buffer. As strings, each file brought two allocations made
    /// on the fetching thread and freed on the merging one, and glibc's allocator serialises
    /// such frees on the arena's lock: on two cores a no-op resync of 100,000 files spent a
    /// quarter of its CPU time there (750 futex calls, against 150 with the frees kept on
    /// their own thread). The merge compares the bytes where they lie and makes a key and an
    /// entry only for a path it keeps.
    final class SideReader {
        /// One listed item, converted where the page was fetched.
        enum Item: Sendable {
            case file(ObjectKey, SyncEntry)
            case unaddressable(UnaddressableKey)
        }

        /// The side listed a key after a later one (or twice): it cannot be merged as a stream.
        struct OutOfOrder: Error {}

        /// One page of selected files, packed: a few allocations a page, none a file.
        struct Page: Sendable {
            /// One file: where its path and entity tag lie in ``bytes``.
            struct File: Sendable {
                var path: Range<Int>
                var etag: Range<Int>?
                var size: Int64
                var modified: Date?
                /// Its checksums' index in ``checksums``; -1 for none (a local file, most objects).
                var checksums: Int
            }

            var bytes: [UInt8] = []
            var files: [File] = []
            var checksums: [[ChecksumAlgorithm: String]] = []
            /// Keys the side cannot address, each after as many of this page's files as `position`.
            var unaddressable: [(position: Int, key: UnaddressableKey)] = []

            /// Whether `path` sorts after the last file (after `previous`, the last of the page
            /// before, for the first): a side's files come in key order, each once.
            func follows(_ path: UnsafeBufferPointer<UInt8>, after previous: [UInt8]?) -> Bool {
                if let last = files.last {
                    return bytes.withUnsafeBufferPointer { ObjectKey.compareBytes(UnsafeBufferPointer(rebasing: $0[last.path]), path) < 0 }
                }
                return previous.map { $0.withUnsafeBufferPointer { ObjectKey.compareBytes($0, path) < 0 } } ?? true
            }

            /// Adds a file listed at `path` (relative to the endpoint).
            mutating func append(_ path: UnsafeBufferPointer<UInt8>, _ file: RemoteFile) {
                let start = bytes.count
                bytes.append(contentsOf: path)
                let pathRange = start..<bytes.count
                var etagRange: Range<Int>?
                if let etag = file.etag {
                    let start = bytes.count
                    // From where the string holds its bytes: appending its UTF-8 view went a byte at a time.
                    if etag.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil { bytes.append(contentsOf: etag.utf8) }
                    etagRange = start..<bytes.count
                }
                var index = -1
                if !file.checksums.isEmpty {
                    index = checksums.count
                    checksums.append(file.checksums)
                }
                files.append(File(path: pathRange, etag: etagRange, size: file.size, modified: file.modificationDate, checksums: index))
            }

            /// The path of the last file, to check the next page's order against.
            var lastPath: [UInt8]? { files.last.map { Array(bytes[$0.path]) } }
        }

        private typealias Fetch = Task<(page: Page, rest: RemoteListing.Pages.Iterator?), any Error>

        private let prefix: String
        /// What a streamed side selects (nil when it was listed whole).
        private let selection: SyncOptions?
        // Unchecked at run time: only the merge's task uses a reader, one call at a time, and
        // checking each access to these was 2.6 % of a no-op resync's instructions.
        @exclusivity(unchecked) private var page = Page()
        /// The file the merge is at, in ``page``, and the next unaddressable key to record.
        @exclusivity(unchecked) private var index = 0
        @exclusivity(unchecked) private var nextUnaddressable = 0
        private var pending: Fetch?
        /// How many selected files were taken: all of them, once the merge is done.
        @exclusivity(unchecked) private(set) var count = 0
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
            let pages = endpoint.provider.list(ListOptions(prefix: endpoint.prefix)).pages.makeAsyncIterator()
            pending = Self.fetch(pages, prefix: endpoint.prefix, options: options, after: nil)
        }

        /// Reads a listing already whole and sorted (a side that lists out of order).
        init(sorted listing: Listing, prefix: String) {
            self.prefix = prefix
            selection = nil
            for (path, entry) in listing.entries {
                let file = RemoteFile(path: path, size: entry.size, modificationDate: entry.modified, checksums: entry.checksums, etag: entry.etag)
                Array(path.rawValue.utf8).withUnsafeBufferPointer { page.append($0, file) }
            }
            for key in listing.unaddressable { record(key) }
        }

        deinit { pending?.cancel() }

        /// Fetches one page and packs it, off the merge's task.
        private static func fetch(_ pages: RemoteListing.Pages.Iterator, prefix: String, options: SyncOptions, after previous: [UInt8]?) -> Fetch {
            Task {
                var pages = pages
                guard var entries = try await pages.next()?.entries else { return (Page(), nil) }
                var page = Page()
                page.files.reserveCapacity(entries.count)
                let everything = options.takesEverything
                for index in entries.indices {
                    // Moved out of the page, so binding its description does not copy it.
                    var entry = ListEntry.directory("")
                    swap(&entry, &entries[index])
                    switch consume entry {
                    case .object(let file):
                        // The path relative to the prefix, as bytes where the key holds them.
                        let status: Packing? = file.path.rawValue.utf8.withContiguousStorageIfAvailable { key in
                            Self.pack(key, file, prefix: prefix, options: options, everything: everything, into: &page, after: previous)
                        }
                        let outcome = try (status ?? Array(file.path.rawValue.utf8).withUnsafeBufferPointer { key in
                            Self.pack(key, file, prefix: prefix, options: options, everything: everything, into: &page, after: previous)
                        }).get()
                        if case .unaddressable(let key) = outcome { page.unaddressable.append((page.files.count, key)) }
                    case .unaddressable(let key):
                        page.unaddressable.append((page.files.count, key))
                    case .directory:
                        continue
                    }
                }
                return (page, pages)
            }
        }

        private typealias Packing = Result<PackOutcome, OutOfOrder>
        private enum PackOutcome {
            case packed, skipped
            case unaddressable(UnaddressableKey)
        }

        /// Packs one listed file whose key's bytes are `key`, as ``item(_:prefix:options:)`` converts it.
        private static func pack(
            _ key: UnsafeBufferPointer<UInt8>, _ file: RemoteFile, prefix: String, options: SyncOptions, everything: Bool, into page: inout Page,
            after previous: [UInt8]?
        ) -> Packing {
            let count = prefix.utf8.count
            let under =
                count == 0
                || (key.count >= count
                    && (prefix.utf8.withContiguousStorageIfAvailable { memcmp($0.baseAddress!, key.baseAddress!, count) == 0 } ?? file.path.hasPrefix(prefix)))
            guard under else { return .success(.skipped) }
            // The endpoint's prefix ends a segment, so what follows it in a valid key is one.
            guard count == 0 || (prefix.utf8.last == UInt8(ascii: "/") && key.count > count) else {
                // The folder's own marker (`prefix/`) and the like: held, but not a path.
                return .success(.unaddressable(UnaddressableKey(bytes: Array(key), reason: "it names no file inside the synced folder")))
            }
            let relative = UnsafeBufferPointer(rebasing: key[count...])
            if !everything {
                guard let path = file.path.relative(to: prefix), options.takesPart(path) else { return .success(.skipped) }
            }
            guard page.follows(relative, after: previous) else { return .failure(OutOfOrder()) }
            page.append(relative, file)
            return .success(.packed)
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

        /// Moves to the next file, if the merge is not at one, and says whether there is one.
        /// Every unaddressable key listed before it has been recorded by then: a key that hides
        /// a path sorts at or before it.
        ///
        /// - Throws: ``OutOfOrder``; what listing the side throws; `cancelled`.
        func ready() async throws -> Bool {
            while true {
                while nextUnaddressable < page.unaddressable.count, page.unaddressable[nextUnaddressable].position <= index {
                    record(page.unaddressable[nextUnaddressable].key)
                    nextUnaddressable += 1
                }
                if index < page.files.count { return true }
                guard let fetch = pending else { return false }
                let (next, rest) = try await withTaskCancellationHandler {
                    try await fetch.value
                } onCancel: {
                    fetch.cancel()
                }
                // The page is read; the next one is fetched while the merge works through it.
                let last = page.lastPath
                (page, index, nextUnaddressable) = (next, 0, 0)
                if let rest, let selection {
                    pending = Self.fetch(rest, prefix: prefix, options: selection, after: next.lastPath ?? last)
                } else {
                    pending = nil
                }
            }
        }

        /// How the current file's path sorts against `other`'s current file's (both ready).
        func compareCurrent(with other: SideReader) -> Int32 {
            page.bytes.withUnsafeBufferPointer { mine in
                other.page.bytes.withUnsafeBufferPointer { theirs in
                    ObjectKey.compareBytes(
                        UnsafeBufferPointer(rebasing: mine[page.files[index].path]), UnsafeBufferPointer(rebasing: theirs[other.page.files[other.index].path]))
                }
            }
        }

        /// How the current file's path sorts against the bytes at `range` of `bytes` (ready).
        func compareCurrent(with bytes: [UInt8], _ range: Range<Int>) -> Int32 {
            page.bytes.withUnsafeBufferPointer { mine in
                bytes.withUnsafeBufferPointer { theirs in
                    ObjectKey.compareBytes(UnsafeBufferPointer(rebasing: mine[page.files[index].path]), UnsafeBufferPointer(rebasing: theirs[range]))
                }
            }
        }

        /// The current file's path as a key (ready).
        func currentKey() -> ObjectKey {
            ObjectKey.validated(relative: String(decoding: page.bytes[page.files[index].path], as: UTF8.self))
        }

        /// Whether the current file (ready) is the version a baseline recorded, as
        /// ``SyncEntry/isSameVersion(as:)`` decides: same size and entity tag, read where the
        /// baseline page (`recorded`, the side at `side`) and this one hold them. `snapshot`
        /// makes the recorded entry when the bytes alone cannot tell.
        func currentIsSameVersion(as side: BaselinePage.Side, in recorded: BaselinePage, snapshot: () -> SyncEntry) -> Bool {
            let file = page.files[index]
            guard file.size == side.size else { return false }
            if let etag = file.etag, let old = side.etag {
                let equal = page.bytes.withUnsafeBufferPointer { mine in
                    recorded.bytes.withUnsafeBufferPointer { theirs in
                        ObjectKey.compareBytes(UnsafeBufferPointer(rebasing: mine[etag]), UnsafeBufferPointer(rebasing: theirs[old])) == 0
                    }
                }
                // Equal bytes are the same tag; `String` equality, which the comparison uses,
                // also equates other spellings of the same characters, so anything else asks it.
                if equal { return true }
            }
            return entry(file).isSameVersion(as: snapshot())
        }

        /// Takes the current file (ready): its entry, and the merge moves past it.
        func takeCurrent() -> SyncEntry {
            let taken = entry(page.files[index])
            skipCurrent()
            return taken
        }

        /// Moves past the current file (ready) without making its entry.
        func skipCurrent() {
            index += 1
            count += 1
        }

        /// `file`'s entry, made from the page.
        private func entry(_ file: Page.File) -> SyncEntry {
            SyncEntry(
                size: file.size, modified: file.modified, checksums: file.checksums >= 0 ? page.checksums[file.checksums] : [:],
                etag: file.etag.map { String(decoding: page.bytes[$0], as: UTF8.self) })
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
        _ local: SideReader, _ remote: SideReader, selects: ((ObjectKey) -> Bool)?,
        baselines: (String?) throws -> BaselinePage?,
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
        /// Makes rows for listed paths before `limit`, a path's bytes in a baseline page (all
        /// of them when nil). Both sides are left ready at or past `limit`, with every key that
        /// could hide it recorded.
        func drain(before limit: (bytes: [UInt8], range: Range<Int>)?) async throws {
            while true {
                let hasMine = try await local.ready()
                let hasTheirs = try await remote.ready()
                // The side or sides whose next path comes first.
                var fromLocal = hasMine
                var fromRemote = hasTheirs
                if hasMine && hasTheirs {
                    let order = local.compareCurrent(with: remote)
                    (fromLocal, fromRemote) = (order <= 0, order >= 0)
                }
                guard fromLocal || fromRemote else { return }
                let lead = fromLocal ? local : remote
                if let limit, lead.compareCurrent(with: limit.bytes, limit.range) >= 0 { return }
                let path = lead.currentKey()
                let mine: Optional<SyncEntry> = fromLocal ? local.takeCurrent() : nil
                let theirs: Optional<SyncEntry> = fromRemote ? remote.takeCurrent() : nil
                if hidden(path, mine, theirs) { continue }
                merged.rows.append(row(path, mine, theirs))
                try await handOver()
            }
        }
        // The last stored path taken, in one buffer written over for each.
        var previous: [UInt8]?
        var after: String?
        while let page = try baselines(after) {
            for index in page.rows.indices {
                let stored = page.rows[index]
                // The store returns keys in order; a repeated or backwards key is skipped.
                let ordered = page.bytes.withUnsafeBufferPointer { bytes in
                    previous.map { $0.withUnsafeBufferPointer { ObjectKey.compareBytes($0, UnsafeBufferPointer(rebasing: bytes[stored.path])) < 0 } } ?? true
                }
                guard ordered else { continue }
                if previous == nil { previous = [] }
                previous?.removeAll(keepingCapacity: true)
                previous?.append(contentsOf: page.bytes[stored.path])
                try await drain(before: (page.bytes, stored.path))
                if let selects, !selects(page.key(index)) { continue }
                // Each side is ready at or past the path: at it when it lists the path.
                let mineHere = try await local.ready() && local.compareCurrent(with: page.bytes, stored.path) == 0
                let theirsHere = try await remote.ready() && remote.compareCurrent(with: page.bytes, stored.path) == 0
                if mineHere && theirsHere
                    && local.currentIsSameVersion(as: stored.local, in: page, snapshot: { page.baseline(index).local })
                    && remote.currentIsSameVersion(as: stored.remote, in: page, snapshot: { page.baseline(index).remote })
                {
                    // Unchanged on both sides: compared where the bytes lie, nothing made.
                    local.skipCurrent()
                    remote.skipCurrent()
                    merged.unchanged += 1
                    continue
                }
                let path = page.key(index)
                let mine: Optional<SyncEntry> = mineHere ? local.takeCurrent() : nil
                let theirs: Optional<SyncEntry> = theirsHere ? remote.takeCurrent() : nil
                if hidden(path, mine, theirs) { continue }
                var kept = row(path, mine, theirs)
                kept.baseline = Int32(merged.baseline.count)
                merged.baseline.append((path, page.baseline(index)))
                merged.rows.append(kept)
                try await handOver()
            }
            let last = page.last
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
