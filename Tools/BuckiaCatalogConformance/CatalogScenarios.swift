import BuckiaCatalog
import BuckiaConformance
import BuckiaCore
import BuckiaMemory
import Foundation

/// The catalog scenarios: see ``CatalogConformance``.
enum CatalogScenarios {
    static var all: [CatalogScenario] { basics + media + queries + hostile }

    /// A record as the scenarios make them: `id-N`, key `files/N.mp4`, media `N.mp4`.
    static func record(_ n: Int, day: Int? = nil, key: String? = nil, url: String? = nil) -> FileRecord {
        FileRecord(
            fileId: "id-\(n)", key: key ?? "files/\(n).mp4", title: "Title \(n)", authorName: "Author \(n % 7)",
            publishDate: day.map { Date(timeIntervalSince1970: Double($0) * 86_400) }, size: Int64(n * 1000),
            url: URL(string: url ?? "https://cdn.example/v/\(n).mp4"))
    }

    static func ids(_ records: [FileRecord]) -> [String] { records.map(\.fileId) }

    // MARK: The seed's operations

    static let basics: [CatalogScenario] = [
        CatalogScenario("records: round trip", contract: "A record cached is read back whole, by id and in the list; an unknown id is nil.") { context in
            let catalog = try await context.open()
            let file = FileRecord(
                fileId: "a", key: "k/a.mp3", title: "Ünïcode ✓", authorName: nil, publishDate: Date(timeIntervalSince1970: 1_700_000_000.25), size: 0,
                url: URL(string: "https://x.example/a.mp3?sig=1"))
            try await catalog.cacheFile(file)
            try Expect.equal(try await catalog.getFile("a"), file, "the record by id")
            try Expect.equal(try await catalog.getFiles(), [file], "the list")
            try Expect.equal(try await catalog.getFile("b"), nil, "an unknown id")
        },
        CatalogScenario("records: upsert", contract: "Caching a record again replaces it; a batch naming a file twice keeps what it says last.") { context in
            let catalog = try await context.open()
            try await catalog.cacheFile(record(1, day: 1))
            var changed = record(1, day: 2)
            changed.title = "changed"
            changed.size = nil
            try await catalog.cacheFile(changed)
            try Expect.equal(try await catalog.getFiles(), [changed], "the list after caching a changed record")
            var last = record(2)
            last.title = "last"
            try await catalog.cacheFiles([record(2), record(3), last])
            try Expect.equal(try await catalog.getFile("id-2"), last, "the record a batch named twice")
            try Expect.equal(try await catalog.getFiles().count, 3, "records")
        },
        CatalogScenario("records: newest first", contract: "getFiles lists the newest first, undated records last, ties by key.") { context in
            let catalog = try await context.open()
            try await catalog.cacheFiles([record(1, day: 5), record(2), record(3, day: 9), record(4, day: 5, key: "a-first"), record(5, day: 1)])
            try Expect.equal(ids(try await catalog.getFiles()), ["id-3", "id-4", "id-1", "id-5", "id-2"], "the order")
        },
        CatalogScenario("records: 10,000 in a batch", contract: "10,000 records in one batch are inserted, then updated, all of them.") { context in
            let catalog = try await context.open()
            let files = (0..<10_000).map { record($0, day: $0 % 400) }
            try await catalog.cacheFiles(files)
            try Expect.equal(try await catalog.getFiles().count, 10_000, "records after the insert")
            let updated = files.map { file -> FileRecord in
                var file = file
                file.title = "v2 " + (file.title ?? "")
                return file
            }
            try await catalog.cacheFiles(updated)
            let stored = try await catalog.getFiles()
            try Expect.equal(stored.count, 10_000, "records after the update")
            try Expect.that(Set(stored) == Set(updated), "some records were not updated")
        },
        CatalogScenario("records: update URL", contract: "updateFileUrl changes the URL; for an unknown id it is notFound.") { context in
            let catalog = try await context.open()
            try await catalog.cacheFile(record(1))
            let url = URL(fileURLWithPath: "/other/1.mp4")
            try await catalog.updateFileUrl("id-1", url)
            try Expect.equal(try await catalog.getFile("id-1")?.url, url, "the URL")
            try await Expect.error(.notFound, "updating an unknown id") { try await catalog.updateFileUrl("missing", url) }
        },
        CatalogScenario(
            "records: persistence", contract: "Records, and a change saved with saveContext, are there when the catalog is opened again.", requires: [.persistent]
        ) { context in
            let first = try await context.open()
            try await first.cacheFiles([record(1, day: 1), record(2, day: 2)])
            try await first.deleteFile(record(1))
            try await first.saveContext()
            let second = try await context.open()
            try Expect.equal(ids(try await second.getFiles()), ["id-2"], "the records after opening again")
        },
        CatalogScenario("records: invalid", contract: "An invalid record (empty id or key, negative size, NUL) fails its whole batch, naming the problem.") { context in
            let catalog = try await context.open()
            for bad in [FileRecord(fileId: "", key: "k"), FileRecord(fileId: "x", key: ""), FileRecord(fileId: "x", key: "k", size: -1), FileRecord(fileId: "x\u{0}", key: "k")] {
                try await Expect.error(.invalidConfiguration, "caching \(bad)") { try await catalog.cacheFiles([record(1), bad]) }
            }
            try Expect.equal(try await catalog.getFiles(), [], "records after refused batches")
        },
        CatalogScenario("records: refresh", contract: "refresh caches a provider's listing under a prefix; with removingMissing it drops what the listing lost.") { context in
            let catalog = try await context.open()
            let provider = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
            for key in ["videos/a.mp4", "videos/b.mp4", "videos/deep/c.mp4", "other/d.mp4"] {
                try await provider.uploadData(Data(key.utf8), remotePath: ObjectKey(key), options: UploadOptions())
            }
            try await catalog.cacheFile(FileRecord(fileId: "manual", key: "elsewhere/x.mp4"))
            let first = try await catalog.refresh(from: provider, prefix: "videos")
            try Expect.that(first.cached == 3 && first.removed == 0, "the first refresh cached \(first.cached) and removed \(first.removed), expected 3 and 0")
            try Expect.equal(try await catalog.getFile("videos/deep/c.mp4")?.size, Int64("videos/deep/c.mp4".utf8.count), "the size")
            try Expect.equal(try await catalog.getFile("videos/a.mp4")?.title, "a.mp4", "the title")
            try await provider.deleteFile(remotePath: ObjectKey("videos/b.mp4"))
            let second = try await catalog.refresh(from: provider, prefix: "videos/", removingMissing: true)
            try Expect.that(second.cached == 2 && second.removed == 1, "the second refresh cached \(second.cached) and removed \(second.removed), expected 2 and 1")
            try Expect.equal(Set(ids(try await catalog.getFiles())), ["videos/a.mp4", "videos/deep/c.mp4", "manual"], "the records")
        },
        CatalogScenario("records: live query", contract: "observeFiles gives the list now, then the newest list after changes, coalesced for a slow reader.") { context in
            let catalog = try await context.open()
            try await catalog.cacheFile(record(1, day: 1))
            // Each change is published before the operation returns, so the list is waiting
            // when next() is called; a catalog that never publishes hangs here until the
            // runner's time limit fails it (no wall-clock window a starved process overruns).
            var updates = catalog.observeFiles().makeAsyncIterator()
            try Expect.equal(try await updates.next().map(ids), ["id-1"], "the first list")
            for n in 2...6 { try await catalog.cacheFile(record(n, day: n)) }
            try Expect.equal(try await updates.next().map(ids), ["id-6", "id-5", "id-4", "id-3", "id-2", "id-1"], "the list after five changes, read once")
            try await catalog.deleteFile(record(6))
            try Expect.equal(try await updates.next()?.first?.fileId, "id-5", "the list's first record after a delete")
            try await catalog.truncateFiles()
            try Expect.equal(try await updates.next(), [], "the list after truncating")
        },
        CatalogScenario(
            "records: live query, another catalog's commits",
            contract: "A live query sees what another catalog opened on the same storage commits, without a change of its own.", requires: [.sharedStorage]
        ) { context in
            let catalog = try await context.open()
            let other = try await context.open()
            try await catalog.cacheFile(record(1, day: 1))
            var updates = catalog.observeFiles().makeAsyncIterator()
            try Expect.equal(try await updates.next().map(ids), ["id-1"], "the first list")
            // Nothing is written through `catalog` from here on: a catalog that publishes only
            // its own commits hangs here until the runner's time limit fails it.
            try await other.cacheFile(record(2, day: 2))
            try Expect.equal(try await updates.next().map(ids), ["id-2", "id-1"], "the list after the other catalog's commit")
            try await other.deleteFile(record(1))
            try Expect.equal(try await updates.next().map(ids), ["id-2"], "the list after the other catalog's delete")
        },
    ]

    // MARK: Media

    static let media: [CatalogScenario] = [
        CatalogScenario("media: key replacement", contract: "A record with a key another record holds replaces that record, and the replaced one's media goes.") { context in
            let catalog = try await context.open()
            let file = try context.place("old.mp4", in: context.media)
            try await catalog.cacheFiles([record(1, key: "shared", url: "https://x/old.mp4"), record(2)])
            try await catalog.cacheFile(record(3, key: "shared", url: "https://x/new.mp4"))
            try Expect.equal(try await catalog.getFile("id-1"), nil, "the replaced record")
            try Expect.equal(try await catalog.getFile("id-3")?.key, "shared", "the new record's key")
            try Expect.equal(try await catalog.getFiles().count, 2, "records")
            try Expect.that(!context.exists(file), "the replaced record's media file is still there")
        },
        CatalogScenario("media: delete", contract: "deleteFile removes the record, then its downloaded copy, and nothing else.") { context in
            let catalog = try await context.open()
            let mine = try context.place("1.mp4", in: context.media)
            let other = try context.place("2.mp4", in: context.media)
            try await catalog.cacheFiles([record(1), record(2)])
            try await catalog.deleteFile(record(1))
            try Expect.equal(ids(try await catalog.getFiles()), ["id-2"], "the records")
            try Expect.that(!context.exists(mine), "the deleted record's media file is still there")
            try Expect.that(context.exists(other), "another record's media file was removed")
        },
        CatalogScenario("media: truncate", contract: "truncateFiles removes every record and the media folder's files of the configured extensions only.") { context in
            let catalog = try await context.open()
            let gone = try ["a.mp4", "b.MP3", "c.webm"].map { try context.place($0, in: context.media) }
            let kept = try ["notes.txt", "mp4", "sub/d.mp4"].map { try context.place($0, in: context.media) }
            let beside = try context.place("e.mp4", in: context.outside)
            try await catalog.cacheFiles((1...5).map { record($0) })
            try await catalog.truncateFiles()
            try Expect.equal(try await catalog.getFiles(), [], "records after truncating")
            for url in gone { try Expect.that(!context.exists(url), "\(url.lastPathComponent) is still there") }
            for url in kept + [beside] { try Expect.that(context.exists(url), "\(url.lastPathComponent) was removed") }
        },
        CatalogScenario(
            "media: linked folders",
            contract: "A media folder reached through a link works; a link inside it, named as media, is never followed or removed."
        ) { context in
            // The configured folder is a link to the real one (as /var is on Apple platforms).
            let real = context.folder.appendingPathComponent("real-media", isDirectory: true)
            try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
            let linked = context.folder.appendingPathComponent("linked-media")
            try FileManager.default.createSymbolicLink(at: linked, withDestinationURL: real)
            let catalog = try await context.open { $0.mediaRoot = linked }
            let target = try context.place("target.mp4", in: context.outside)
            try FileManager.default.createSymbolicLink(at: real.appendingPathComponent("trap.mp4"), withDestinationURL: target)
            try FileManager.default.createSymbolicLink(at: real.appendingPathComponent("sub"), withDestinationURL: context.outside)
            let own = try context.place("own.mp4", in: real)
            let records = [
                FileRecord(fileId: "own", key: "own", url: URL(string: "https://cdn.example/own.mp4")),
                FileRecord(fileId: "trap", key: "trap", url: URL(string: "https://cdn.example/trap.mp4")),
                FileRecord(fileId: "sub", key: "sub", url: URL(string: "https://cdn.example/sub%2Ftarget.mp4")),
            ]
            try await catalog.cacheFiles(records)
            try await catalog.deleteFile(records[0])
            try Expect.that(!context.exists(own), "the file in the linked folder was not removed")
            try await catalog.deleteFile(records[1])
            try await catalog.deleteFile(records[2])
            try await catalog.truncateFiles()
            try Expect.that(context.exists(target), "a link's target was removed")
            try Expect.that(context.exists(real.appendingPathComponent("trap.mp4")), "the link named as media was removed")
            try Expect.equal(try FileManager.default.contentsOfDirectory(atPath: context.outside.path), ["target.mp4"], "the folder outside")
        },
    ]

    // MARK: Queries

    static let searchable = [
        FileRecord(fileId: "1", key: "talks/deep.mp4", title: "Deep dive", authorName: "Ada", publishDate: Date(timeIntervalSince1970: 300), size: 30),
        FileRecord(fileId: "2", key: "talks/intro.mp4", title: "Intro", authorName: "Zoë Café", publishDate: Date(timeIntervalSince1970: 100), size: 10),
        FileRecord(fileId: "3", key: "music/café.mp3", title: nil, authorName: "Bob", publishDate: nil, size: nil),
        FileRecord(fileId: "4", key: "music/deeper.mp3", title: "Another deep one", authorName: nil, publishDate: Date(timeIntervalSince1970: 200), size: 20),
    ]

    /// Orders and pages, and the ids each must return in order.
    static let pages: [(FileQuery, [String])] = [
        (FileQuery(), ["1", "4", "2", "3"]),
        (FileQuery(order: .oldestFirst), ["2", "4", "1", "3"]),
        (FileQuery(order: .title), ["4", "1", "2", "3"]),
        (FileQuery(order: .key), ["3", "4", "1", "2"]),
        (FileQuery(order: .largestFirst), ["1", "4", "2", "3"]),
        (FileQuery(limit: 2), ["1", "4"]),
        (FileQuery(limit: 2, offset: 2), ["2", "3"]),
        (FileQuery(offset: 3), ["3"]),
        (FileQuery(limit: 0), []),
        (FileQuery(search: "  ---  "), ["1", "4", "2", "3"]),
    ]

    /// Searches, and the ids each must return in order.
    static let searches: [(FileQuery, [String])] = [
        (FileQuery(search: "deep"), ["1", "4"]),
        (FileQuery(search: "DEEP dive"), ["1"]),
        (FileQuery(search: "cafe"), ["2", "3"]),
        (FileQuery(search: "talks"), ["1", "2"]),
        (FileQuery(search: "mp3", order: .key), ["3", "4"]),
        (FileQuery(search: "ada OR bob"), []),
        (FileQuery(search: "\"deep\"* NOT"), []),
        (FileQuery(search: "de*"), ["1", "4"]),
        (FileQuery(search: "nothing"), []),
    ]

    static let queries: [CatalogScenario] = [
        CatalogScenario("queries: orders and pages", contract: "fetchFiles orders and pages records; a negative limit is refused.") { context in
            let catalog = try await context.open()
            try await catalog.cacheFiles(searchable)
            for (query, expected) in pages { try Expect.equal(ids(try await catalog.fetchFiles(query)), expected, "\(query)") }
            try await Expect.error(.invalidConfiguration, "a negative limit") { try await catalog.fetchFiles(FileQuery(limit: -1)) }
        },
        CatalogScenario(
            "queries: search", contract: "fetchFiles finds records by word prefixes of title, author and key, any case and accent, and follows changes.",
            requires: [.fullTextSearch]
        ) { context in
            let catalog = try await context.open()
            try await catalog.cacheFiles(searchable)
            for (query, expected) in searches { try Expect.equal(ids(try await catalog.fetchFiles(query)), expected, "\(query)") }
            // The index follows changes: a renamed title is found by its new words only.
            var renamed = searchable[1]
            renamed.title = "Renamed"
            try await catalog.cacheFile(renamed)
            try Expect.equal(ids(try await catalog.fetchFiles(FileQuery(search: "renamed"))), ["2"], "the renamed title")
            try Expect.equal(ids(try await catalog.fetchFiles(FileQuery(search: "intro"))), ["2"], "the key still says intro")
            try await catalog.deleteFile(searchable[0])
            try Expect.equal(ids(try await catalog.fetchFiles(FileQuery(search: "deep"))), ["4"], "after a delete")
            // A word at the end of a 1 MB title.
            try await catalog.cacheFile(FileRecord(fileId: "huge", key: "huge", title: String(repeating: "word ", count: 200_000) + "needle"))
            try Expect.equal(ids(try await catalog.fetchFiles(FileQuery(search: "needle"))), ["huge"], "the last word of a huge title")
        },
        CatalogScenario(
            "queries: live query of a page",
            contract: "observeQuery gives a query's page now and again after each change; two readers of different queries each get their own; a refused query ends the stream."
        ) { context in
            let catalog = try await context.open()
            try await catalog.cacheFiles(searchable)
            // Records made after this line are waited for, never raced: a catalog that does not
            // publish a change hangs on next() until the runner's time limit fails it.
            var byKey = catalog.observeQuery(FileQuery(order: .key, limit: 2)).makeAsyncIterator()
            var largest = catalog.observeQuery(FileQuery(order: .largestFirst, limit: 1)).makeAsyncIterator()
            try Expect.equal(try await byKey.next().map(ids), ["3", "4"], "the first page by key")
            try Expect.equal(try await largest.next().map(ids), ["1"], "the largest")
            try await catalog.cacheFile(FileRecord(fileId: "5", key: "art/big.mov", title: "Big", publishDate: nil, size: 99))
            try Expect.equal(try await byKey.next().map(ids), ["5", "3"], "the first page by key after a new first key")
            try Expect.equal(try await largest.next().map(ids), ["5"], "the largest after a larger record")
            try await catalog.deleteFile(searchable[2])
            try Expect.equal(try await byKey.next().map(ids), ["5", "4"], "the first page by key after a delete")
            var refused = catalog.observeQuery(FileQuery(limit: -1)).makeAsyncIterator()
            try await Expect.error(.invalidConfiguration, "a live query with a negative limit") { _ = try await refused.next() }
        },
    ]

    // MARK: Hostile records

    static let nfc = "caf\u{E9}"
    static let nfd = "cafe\u{301}"

    static func mediaURL(_ name: String) throws -> URL {
        guard let encoded = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed), let url = URL(string: "https://cdn.example/v/\(encoded)") else {
            throw ConformanceFailure("no URL for \(name.debugDescription)")
        }
        return url
    }

    /// The names in `folder`, as bytes (Swift's `==` folds NFC and NFD spellings together).
    static func names(in folder: URL) throws -> Set<[UInt8]> {
        Set(try FileManager.default.contentsOfDirectory(atPath: folder.path).map { Array($0.utf8) })
    }

    /// Media names that point out of the folder or across a link.
    static let hostileNames = ["../outside/e.mp4", "/tmp/e.mp4", "a/../../outside/e.mp4", "./e.mp4", "link/e.mp4", "", "x\u{0}y"]

    /// URLs whose last component, decoded, would leave the media folder.
    static let hostileURLs = [
        "https://cdn.example/a/..", "https://cdn.example/%2E%2E", "https://cdn.example/x/..%2F..%2Foutside%2Fe.mp4",
        "https://cdn.example/x/%2Ftmp%2Fe.mp4", "file:///etc/e.mp4", "https://cdn.example/", "https://cdn.example/x/%00e.mp4",
    ]

    static let hostile: [CatalogScenario] = [
        CatalogScenario("hostile: media names", contract: "A media name that leaves the folder, or crosses a link, removes nothing outside it.") { context in
            let target = try context.place("e.mp4", in: context.outside)
            try FileManager.default.createSymbolicLink(at: context.media.appendingPathComponent("link"), withDestinationURL: context.outside)
            for name in hostileNames {
                let catalog = try await context.open { $0.mediaName = { _ in name } }
                try await catalog.cacheFile(record(1))
                try await catalog.deleteFile(record(1))
                try Expect.equal(try await catalog.getFile("id-1"), nil, "the record whose media name is \(name.debugDescription)")
                try Expect.that(context.exists(target), "the media name \(name.debugDescription) removed a file outside the folder")
            }
        },
        CatalogScenario(
            "hostile: keys and URLs", contract: "Keys and URLs with `..`, absolute paths and encoded slashes are kept as text; no removal leaves the folder."
        ) { context in
            let catalog = try await context.open()
            let outside = try context.place("e.mp4", in: context.outside)
            for url in hostileURLs {
                let record = FileRecord(fileId: "hostile", key: "../../outside/e.mp4", title: "/etc/passwd", url: URL(string: url))
                try await catalog.cacheFile(record)
                try Expect.equal(try await catalog.getFile("hostile"), record, "the record with \(url)")
                try await catalog.deleteFile(record)
                try Expect.equal(try await catalog.getFile("hostile"), nil, "the deleted record with \(url)")
                try Expect.that(context.exists(outside), "\(url) reached outside the media folder")
            }
            try await catalog.truncateFiles()
            try Expect.that(context.exists(outside), "truncating reached outside the media folder")
        },
        CatalogScenario(
            "hostile: NFC and NFD twins", contract: "NFC and NFD spellings of one name are two records, two keys and two media files, as at a provider."
        ) { context in
            let catalog = try await context.open()
            let a = FileRecord(fileId: nfc, key: "v/\(nfc).mp4", title: "NFC", url: try mediaURL("\(nfc).mp4"))
            let b = FileRecord(fileId: nfd, key: "v/\(nfd).mp4", title: "NFD", url: try mediaURL("\(nfd).mp4"))
            try Expect.that(a != b, "FileRecord's == folds canonical twins; records are equal only byte for byte")
            try await catalog.cacheFiles([a, b])
            try Expect.equal(try await catalog.getFiles().count, 2, "records")
            try Expect.equal(try await catalog.getFile(nfc).map { Array($0.fileId.utf8) }, Array(nfc.utf8), "the NFC record's id")
            try Expect.equal(try await catalog.getFile(nfd).map { Array($0.fileId.utf8) }, Array(nfd.utf8), "the NFD record's id")
            try Expect.equal(try await catalog.getFile(nfd)?.title, "NFD", "the NFD record's title")
            try Data("c".utf8).write(to: context.media.appendingPathComponent("\(nfc).mp4"))
            try Data("d".utf8).write(to: context.media.appendingPathComponent("\(nfd).mp4"))
            guard try names(in: context.media).count == 2 else { throw ConformanceSkip("this file system folds NFC and NFD names into one") }
            // A record taking the NFD key replaces the NFD record only.
            try await catalog.cacheFile(FileRecord(fileId: "taker", key: "v/\(nfd).mp4", title: "taker"))
            try Expect.equal(try await catalog.getFile(nfd), nil, "the NFD record after its key was taken")
            try Expect.equal(try await catalog.getFile(nfc)?.title, "NFC", "the NFC record after its twin's key was taken")
            try Expect.that(try names(in: context.media) == [Array("\(nfc).mp4".utf8)], "the replaced record's media should go and its twin's stay")
            // Removing the NFC record removes its own file and no other.
            try await catalog.deleteFile(a)
            try Expect.equal(ids(try await catalog.getFiles()), ["taker"], "the records")
            try Expect.that(try names(in: context.media).isEmpty, "the NFC media file is still there")
        },
        CatalogScenario("hostile: unusual text", contract: "Empty, huge and unusual text, and extreme dates and sizes, are stored and read back byte for byte.") { context in
            let catalog = try await context.open()
            let records = [
                FileRecord(fileId: "empty", key: "empty", title: "", authorName: "", url: nil),
                FileRecord(fileId: String(repeating: "i", count: 4096), key: String(repeating: "k/", count: 32_768), title: String(repeating: "long ", count: 200_000)),
                FileRecord(fileId: "controls", key: "a\nb\tc\u{7}\r", title: "🎬 \u{202E}txt.exe", authorName: "\u{FEFF}zero width\u{200B}"),
                FileRecord(fileId: "extremes", key: "x", publishDate: Date(timeIntervalSince1970: -62_135_596_800), size: Int64.max),
                FileRecord(fileId: "future", key: "y", publishDate: Date(timeIntervalSince1970: 253_402_300_799), size: 0),
            ]
            try await catalog.cacheFiles(records)
            for expected in records {
                try Expect.that(try await catalog.getFile(expected.fileId) == expected, "\(expected.fileId.prefix(20)) came back changed")
            }
            try Expect.equal(try await catalog.getFile("empty")?.title, "", "an empty title (not nil)")
            try Expect.equal(Array(ids(try await catalog.getFiles()).prefix(2)), ["future", "extremes"], "the dated records' order")
        },
        CatalogScenario("hostile: dates that are not times", contract: "A publish date that is not a finite time (NaN, ±infinity) is refused, not stored as no date.") { context in
            let catalog = try await context.open()
            for seconds in [Double.nan, .infinity, -.infinity] {
                try await Expect.error(.invalidConfiguration, "a publish date of \(seconds)") {
                    try await catalog.cacheFile(FileRecord(fileId: "t", key: "t", publishDate: Date(timeIntervalSince1970: seconds)))
                }
            }
            try Expect.equal(try await catalog.getFiles(), [], "records")
        },
    ]
}
