import BuckiaCore
import Foundation

/// Which records to fetch: an order, a page, and words to find.
public struct FileQuery: Hashable, Sendable {
    /// The orders a catalog sorts by; ties go by key.
    public enum Order: String, Hashable, Sendable, CaseIterable {
        /// The newest `publishDate` first, undated records last.
        case newestFirst
        /// The oldest `publishDate` first, undated records last.
        case oldestFirst
        /// By title (byte order), untitled records last.
        case title
        /// By key (byte order).
        case key
        /// The largest first, records without a size last.
        case largestFirst

        package var sql: String {
            switch self {
            case .newestFirst: "publish_date IS NULL, publish_date DESC, key"
            case .oldestFirst: "publish_date IS NULL, publish_date ASC, key"
            case .title: "title IS NULL, title, key"
            case .key: "key"
            case .largestFirst: "size IS NULL, size DESC, key"
            }
        }

        /// Whether `a` comes before `b`, as the SQL above orders them.
        func precedes(_ a: FileRecord, _ b: FileRecord) -> Bool {
            func byKey() -> Bool { a.key.utf8.lexicographicallyPrecedes(b.key.utf8) }
            func optional<T: Comparable>(_ x: T?, _ y: T?, descending: Bool, _ less: (T, T) -> Bool) -> Bool {
                switch (x, y) {
                case let (x?, y?): if x == y { return byKey() } else { return descending ? less(y, x) : less(x, y) }
                case (.some, nil): return true
                case (nil, .some): return false
                case (nil, nil): return byKey()
                }
            }
            switch self {
            case .newestFirst: return optional(a.publishDate, b.publishDate, descending: true, <)
            case .oldestFirst: return optional(a.publishDate, b.publishDate, descending: false, <)
            case .title: return optional(a.title, b.title, descending: false) { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            case .key: return byKey()
            case .largestFirst: return optional(a.size, b.size, descending: true, <)
            }
        }
    }

    /// Words to find: a record matches when each word begins a word of its title, author or
    /// key, regardless of case and diacritics (`deep` finds "Deep dive" and `talks/deep.mp4`).
    /// Anything but letters and digits separates words, so no query syntax gets through; a
    /// search with no words in it matches every record.
    public var search: String?
    /// The order.
    public var order: Order
    /// At most this many records; nil for all.
    public var limit: Int?
    /// Records to skip first.
    public var offset: Int

    /// A query; the default is every record, newest first.
    public init(search: String? = nil, order: Order = .newestFirst, limit: Int? = nil, offset: Int = 0) {
        self.search = search
        self.order = order
        self.limit = limit
        self.offset = offset
    }

    func validate() throws {
        guard limit.map({ $0 >= 0 }) ?? true, offset >= 0 else {
            throw BuckiaError(.invalidConfiguration, "A file query's limit and offset cannot be negative.", operation: "fetch files")
        }
    }

    /// The search's words, folded to lower case without diacritics.
    var searchTerms: [String] { search.map(Self.words) ?? [] }

    /// The words of `text`: runs of letters and digits, folded.
    static func words(_ text: String) -> [String] {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
            .split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }

    /// Whether `record` matches the search (the in-memory catalog's way; SQLite's FTS5 index
    /// does the same for the live one).
    func matches(_ record: FileRecord) -> Bool {
        let terms = searchTerms
        let words = [record.title, record.authorName, record.key].compactMap { $0 }.flatMap(Self.words)
        return terms.allSatisfy { term in words.contains { $0.hasPrefix(term) } }
    }

    /// The page of `records` (already matched) this query asks for, in its order.
    func page(_ records: [FileRecord]) -> [FileRecord] {
        let sorted = records.sorted(by: order.precedes)
        let start = min(offset, sorted.count)
        let end = limit.map { min(sorted.count, start + $0) } ?? sorted.count
        return Array(sorted[start..<end])
    }
}
