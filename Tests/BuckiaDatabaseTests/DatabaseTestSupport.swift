import BuckiaCore
import BuckiaDatabase
import BuckiaSQLite
import Foundation

/// Scratch folders, databases and comparisons shared by the database tests.
enum DB {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let makeDiffScript = packageRoot.appendingPathComponent("Docs/Examples/diff/make_diff.py")
    static let corpus = packageRoot.appendingPathComponent("Tests/Fixtures/Diffs")

    /// A fresh scratch folder.
    static func scratch(_ name: String = "db") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-\(name)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The app schema both users have in the exchange tests.
    static let schema = """
        CREATE TABLE recordings (id INTEGER PRIMARY KEY, title TEXT NOT NULL DEFAULT '', owner TEXT, duration REAL, thumbnail BLOB);
        CREATE TABLE shares (recording INTEGER NOT NULL, user TEXT NOT NULL, role TEXT NOT NULL DEFAULT 'viewer', PRIMARY KEY (recording, user));
        """

    /// A database at `url` with the app schema and `sql` run on it.
    @discardableResult
    static func make(_ url: URL, _ sql: String = "") throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: url.path)
        try connection.execute(schema)
        if !sql.isEmpty { try connection.execute(sql) }
        return connection
    }

    /// Every row of every user table (Buckia's own left out), sorted, as text: what two
    /// databases that should be equal are compared by.
    static func dump(_ url: URL) throws -> [String] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        let tables = try connection.query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'buckia_%' AND name NOT LIKE 'sqlite_%' ORDER BY name") { $0.string(0) ?? "" }
        var lines: [String] = []
        for table in tables {
            let rows = try connection.query("SELECT * FROM \"\(table)\"") { row in
                (0..<row.count).map { "\(row.value($0))" }.joined(separator: "|")
            }
            lines += rows.sorted().map { "\(table): \($0)" }
        }
        return lines
    }

    /// The rows of one table, as text.
    static func dumpTable(_ url: URL, _ table: String) throws -> [String] {
        try dump(url).filter { $0.hasPrefix("\(table): ") }
    }

    /// The bytes of a file, and of its -wal and -journal if any.
    static func bytes(_ url: URL) throws -> [Data] {
        try [url.path, url.path + "-wal", url.path + "-journal"].map { path in
            FileManager.default.fileExists(atPath: path) ? try Data(contentsOf: URL(fileURLWithPath: path)) : Data()
        }
    }
}
