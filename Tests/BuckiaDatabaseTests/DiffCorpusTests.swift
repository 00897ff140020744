import BuckiaCore
@testable import BuckiaDatabase
import BuckiaSQLite
import Foundation
import Testing

/// The hostile and broken diffs under Tests/Fixtures/Diffs (make_corpus.py writes them): each
/// is refused with its own problem, and the database it was applied to is byte for byte as it
/// was.
@Suite("Diff corpus: hostile and broken files are refused and change nothing")
struct DiffCorpusTests {
    static let expected: [String: String] = {
        guard let data = FileManager.default.contents(atPath: DB.corpus.appendingPathComponent("expected.json").path),
            let table = try? JSONDecoder().decode([String: String].self, from: data)
        else { return [:] }
        return table
    }()
    static let now = Date(timeIntervalSince1970: 1_790_000_000 + 1000)

    /// The local schema the cases meet: the app's tables, a table with a required column, a
    /// view, and a table with a generated column.
    static let extras = """
        CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
        CREATE VIEW recent AS SELECT id, title FROM recordings;
        CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER, twice INTEGER GENERATED ALWAYS AS (n * 2));
        CREATE VIRTUAL TABLE docs USING fts5(body);
        INSERT INTO docs VALUES ('searchable');
        INSERT INTO recordings VALUES (12, 'deleted by base', NULL, NULL, NULL), (99, 'untouched', 'u3', 9.0, NULL);
        """

    static func diff(in name: String) throws -> URL {
        let folder = DB.corpus.appendingPathComponent(name, isDirectory: true)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sqlite") }
        guard files.count == 1, let file = files.first else { throw BuckiaError(.notFound, "The corpus case \(name) holds \(files.count) diff files.") }
        return folder.appendingPathComponent(file)
    }

    @Test("The corpus has at least 40 cases, and make_corpus.py wrote every one it lists")
    func size() throws {
        #expect(Self.expected.count >= 40)
        for name in Self.expected.keys { _ = try Self.diff(in: name) }
    }

    @Test("Each case is refused with its problem, and the database is unchanged", arguments: expected.keys.sorted())
    func refused(_ name: String) throws {
        let folder = try DB.scratch("corpus")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("app.sqlite")
        let connection = try DB.make(database, Self.extras)
        let base = try DiffApplier.apply(try Self.diff(in: "base"), to: connection, options: ApplyOptions(), now: Self.now)
        #expect(base.upserted == 2 && base.deleted == 1)
        let before = try DB.bytes(database)
        let rows = try DB.dump(database)
        let file = try Self.diff(in: name)
        do {
            let change = try DiffApplier.apply(file, to: connection, options: ApplyOptions(), now: Self.now)
            Issue.record("\(name) was applied: \(change)")
        } catch let error as BuckiaError {
            let problem = error.cause as? DiffProblem
            #expect(problem?.kind == Self.expected[name], "\(name): \(error)")
            #expect(error.message.components(separatedBy: "The database was not changed").count == 2, "said once: \(error.message)")
        }
        #expect(try DB.bytes(database) == before, "\(name) changed the database file")
        #expect(try DB.dump(database) == rows)
        #expect(try connection.query("PRAGMA integrity_check") { $0.string(0) ?? "" } == ["ok"])
    }
}
