import BuckiaCore
import BuckiaSQLite
import Foundation

/// What the cache knows of a stored response, for freshness and revalidation (RFC 9111):
/// filled by the downloader, kept by the index.
public struct CachedResponse: Sendable, Hashable, Codable {
    /// The response's entity tag, for `If-None-Match`.
    public var etag: String?
    /// Its `Last-Modified`, as sent, for `If-Modified-Since`.
    public var lastModified: String?
    /// Its `Cache-Control`, as sent.
    public var cacheControl: String?
    /// Its `Content-Type`.
    public var contentType: String?
    /// Until when it may be served without asking the origin; nil: always ask.
    public var freshUntil: Date?
    /// When the response (or the 304 that last confirmed it) arrived. A clock now earlier than
    /// this has moved backwards, and the entry is asked about rather than trusted as fresh
    /// for longer than its lifetime.
    public var receivedAt: Date?

    public init(
        etag: String? = nil, lastModified: String? = nil, cacheControl: String? = nil, contentType: String? = nil, freshUntil: Date? = nil,
        receivedAt: Date? = nil
    ) {
        (self.etag, self.lastModified, self.cacheControl, self.contentType, self.freshUntil) = (etag, lastModified, cacheControl, contentType, freshUntil)
        self.receivedAt = receivedAt
    }

    /// Whether it may be served without asking the origin at `now`: before ``freshUntil``,
    /// and not before ``receivedAt`` (a clock that moved back; a second's leeway covers
    /// rounding in storage and clocks that disagree by less).
    public func isFresh(at now: Date) -> Bool {
        guard let freshUntil, now < freshUntil else { return false }
        return !clockMovedBack(now)
    }

    /// Whether `now` is more than a second before ``receivedAt``.
    func clockMovedBack(_ now: Date) -> Bool {
        receivedAt.map { $0.timeIntervalSince(now) > 1 } ?? false
    }
}

/// One row of the index.
struct IndexRow: Sendable, Hashable {
    var key: String
    var location: String
    /// Relative to the cache folder.
    var path: String
    /// SHA-256 (hex) of the stored file's bytes.
    var contentHash: String
    /// Bytes the stored file holds.
    var size: Int64
    /// Bytes of the resource before the transform.
    var originalSize: Int64
    var transform: String
    var processor: String
    var response: CachedResponse
    var storedAt: Date
    var lastAccess: Date
    var hits: Int64
    var pinned: Bool
    var priority: Int
    /// The order of its last use among all entries (higher: more recent); assigned by the index.
    var accessOrder: Int64 = 0

    var info: CacheEntryInfo {
        CacheEntryInfo(key: key, size: size, storedAt: storedAt, lastAccess: lastAccess, hits: hits, priority: priority, pinned: pinned, accessOrder: accessOrder)
    }
}

/// The cache's index: one SQLite table every eviction policy reads, never file timestamps.
final class ResourceIndex: Sendable {
    /// `BRCI`: marks a database as a resource cache index (`PRAGMA application_id`).
    static let applicationID: Int64 = 0x4252_4349
    static let migrations = [
        """
        CREATE TABLE cache_entries (
            key TEXT PRIMARY KEY,
            location TEXT NOT NULL,
            path TEXT NOT NULL UNIQUE,
            content_hash TEXT NOT NULL,
            size INTEGER NOT NULL,
            original_size INTEGER NOT NULL,
            transform TEXT NOT NULL,
            processor TEXT NOT NULL,
            etag TEXT,
            last_modified TEXT,
            cache_control TEXT,
            content_type TEXT,
            fresh_until REAL,
            stored_at REAL NOT NULL,
            last_access REAL NOT NULL,
            hits INTEGER NOT NULL DEFAULT 0,
            pinned INTEGER NOT NULL DEFAULT 0,
            priority INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE INDEX cache_entries_access ON cache_entries (last_access);
        """,
        // Recency as an order the index assigns, not a time: a clock moving backwards (or two
        // processes' clocks disagreeing) cannot make the entry read last look oldest.
        """
        ALTER TABLE cache_entries ADD COLUMN access_order INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE cache_entries ADD COLUMN received_at REAL;
        DROP INDEX cache_entries_access;
        CREATE INDEX cache_entries_order ON cache_entries (access_order);
        """,
        // The totals every store checks against the limits, kept by triggers in the same
        // transaction as the rows (whichever process writes): one row read, not a scan.
        """
        CREATE TABLE cache_totals (id INTEGER PRIMARY KEY CHECK (id = 1), bytes INTEGER NOT NULL, entries INTEGER NOT NULL);
        INSERT INTO cache_totals SELECT 1, coalesce(sum(size), 0), count(*) FROM cache_entries;
        CREATE TRIGGER cache_entries_added AFTER INSERT ON cache_entries
            BEGIN UPDATE cache_totals SET bytes = bytes + new.size, entries = entries + 1 WHERE id = 1; END;
        CREATE TRIGGER cache_entries_removed AFTER DELETE ON cache_entries
            BEGIN UPDATE cache_totals SET bytes = bytes - old.size, entries = entries - 1 WHERE id = 1; END;
        CREATE TRIGGER cache_entries_resized AFTER UPDATE OF size ON cache_entries
            BEGIN UPDATE cache_totals SET bytes = bytes - old.size + new.size WHERE id = 1; END;
        """,
    ]
    static let columns =
        "key, location, path, content_hash, size, original_size, transform, processor, etag, last_modified, cache_control, content_type, fresh_until, stored_at, last_access, hits, pinned, priority, access_order, received_at"
    /// The next access order: one past the highest (read from the index on `access_order`).
    static let nextOrder = "(SELECT coalesce(max(access_order), 0) + 1 FROM cache_entries)"

    private let database: SQLiteDatabase
    let path: String

    init(path: String) throws {
        self.path = path
        do {
            let db = try SQLiteConnection(path: path)
            try Self.prepare(db)
            database = SQLiteDatabase(db)
        } catch let error as BuckiaError where error.code == .corrupt {
            throw BuckiaError(
                .corrupt, "The resource cache's index at \(path) is damaged (\(error.message)). Clear the cache (buckia cache clear) or remove its folder; its entries are downloaded again.",
                operation: "open resource cache", path: path, cause: error)
        }
    }

    private static func prepare(_ db: SQLiteConnection) throws {
        try db.migrate(applicationID: Self.applicationID, migrations: Self.migrations, kind: "resource cache index", operation: "open resource cache")
        try db.setSynchronous(.normal)
    }

    func locked<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try database.withConnection(body)
    }

    static func entry(_ row: SQLiteRow) -> IndexRow {
        IndexRow(
            key: row.string(0) ?? "", location: row.string(1) ?? "", path: row.string(2) ?? "", contentHash: row.string(3) ?? "",
            size: row.int64(4), originalSize: row.int64(5), transform: row.string(6) ?? "", processor: row.string(7) ?? "",
            response: CachedResponse(
                etag: row.string(8), lastModified: row.string(9), cacheControl: row.string(10), contentType: row.string(11),
                freshUntil: row.isNull(12) ? nil : Date(timeIntervalSince1970: row.double(12)),
                receivedAt: row.isNull(19) ? nil : Date(timeIntervalSince1970: row.double(19))),
            storedAt: Date(timeIntervalSince1970: row.double(13)), lastAccess: Date(timeIntervalSince1970: row.double(14)), hits: row.int64(15),
            pinned: row.int64(16) != 0, priority: Int(row.int64(17)), accessOrder: row.int64(18))
    }

    func entry(_ key: String) throws -> IndexRow? {
        try locked { db in try db.query("SELECT \(Self.columns) FROM cache_entries WHERE key = ?1", [.text(key)], Self.entry).first }
    }

    func entries() throws -> [IndexRow] {
        try locked { db in try db.query("SELECT \(Self.columns) FROM cache_entries", [], Self.entry) }
    }

    /// Inserts or replaces the row; returns the path of the row it replaced, if that path differs.
    func put(_ entry: IndexRow) throws -> String? {
        try locked { db in
            try db.transaction {
                let previous = try db.query("SELECT path FROM cache_entries WHERE key = ?1", [.text(entry.key)]) { $0.string(0) ?? "" }.first
                try db.run(
                    """
                    INSERT INTO cache_entries (\(Self.columns))
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \(Self.nextOrder), ?19)
                    ON CONFLICT (key) DO UPDATE SET location = excluded.location, path = excluded.path, content_hash = excluded.content_hash,
                        size = excluded.size, original_size = excluded.original_size, transform = excluded.transform, processor = excluded.processor,
                        etag = excluded.etag, last_modified = excluded.last_modified, cache_control = excluded.cache_control,
                        content_type = excluded.content_type, fresh_until = excluded.fresh_until, stored_at = excluded.stored_at,
                        last_access = excluded.last_access, pinned = excluded.pinned, priority = excluded.priority,
                        access_order = excluded.access_order, received_at = excluded.received_at
                    """,
                    [
                        .text(entry.key), .text(entry.location), .text(entry.path), .text(entry.contentHash), .integer(entry.size),
                        .integer(entry.originalSize), .text(entry.transform), .text(entry.processor), Self.text(entry.response.etag),
                        Self.text(entry.response.lastModified), Self.text(entry.response.cacheControl), Self.text(entry.response.contentType),
                        entry.response.freshUntil.map { .real($0.timeIntervalSince1970) } ?? .null, .real(entry.storedAt.timeIntervalSince1970),
                        .real(entry.lastAccess.timeIntervalSince1970), .integer(entry.hits), .integer(entry.pinned ? 1 : 0), .integer(Int64(entry.priority)),
                        entry.response.receivedAt.map { .real($0.timeIntervalSince1970) } ?? .null,
                    ])
                return previous.flatMap { $0 == entry.path ? nil : $0 }
            }
        }
    }

    static func text(_ value: String?) -> SQLiteValue { value.map { .text($0) } ?? .null }

    /// Records reads, oldest first: each one's hits added, its last access set, and a new
    /// access order given in the order of `hits`, in one transaction.
    func recordHits(_ hits: [(key: String, count: Int64, at: Date)]) throws {
        guard !hits.isEmpty else { return }
        try locked { db in
            try db.transaction {
                for hit in hits {
                    try db.run(
                        "UPDATE cache_entries SET hits = hits + ?2, last_access = ?3, access_order = \(Self.nextOrder) WHERE key = ?1",
                        [.text(hit.key), .integer(hit.count), .real(hit.at.timeIntervalSince1970)])
                }
            }
        }
    }

    func setPinned(_ key: String, _ pinned: Bool) throws -> Bool {
        try locked { db in
            try db.run("UPDATE cache_entries SET pinned = ?2 WHERE key = ?1", [.text(key), .integer(pinned ? 1 : 0)])
            return db.changes > 0
        }
    }

    func remove(_ keys: [String]) throws {
        guard !keys.isEmpty else { return }
        try locked { db in
            try db.transaction {
                for key in keys { try db.run("DELETE FROM cache_entries WHERE key = ?1", [.text(key)]) }
            }
        }
    }

    func removeAll() throws {
        try locked { db in try db.run("DELETE FROM cache_entries") }
    }

    /// Bytes and entries held (the totals the triggers keep).
    func totals() throws -> (bytes: Int64, count: Int) {
        try locked { db in
            try db.query("SELECT bytes, entries FROM cache_totals WHERE id = 1") { ($0.int64(0), Int($0.int64(1))) }.first ?? (0, 0)
        }
    }
}
