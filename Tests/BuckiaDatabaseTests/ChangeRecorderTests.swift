import BuckiaCore
@testable import BuckiaDatabase
import BuckiaSQLite
import Foundation
import Testing

/// Diffs recorded with SQLite's session extension.
@Suite("ChangeRecorder: diffs of what the app changed, from SQLite's session extension")
struct ChangeRecorderTests {
    @Test("Debian's SQLite has the session extension, and the recorder finds it")
    func available() {
        #expect(ChangeRecorder.isAvailable)
    }

    @Test("What the app changed while recording, applied to a copy of the starting database, makes it equal to the app's")
    func recorded() throws {
        let folder = try DB.scratch("session")
        defer { try? FileManager.default.removeItem(at: folder) }
        let app = folder.appendingPathComponent("app.sqlite"), copy = folder.appendingPathComponent("copy.sqlite")
        let start = "INSERT INTO recordings VALUES (1, 'one', 'u1', 1.0, NULL), (2, 'two', 'u1', 2.0, NULL), (3, 'three', NULL, 3.0, X'00');"
        let connection = try DB.make(app, start)
        try DB.make(copy, start)
        let recorder = try ChangeRecorder(recording: connection)
        try connection.execute("""
            UPDATE recordings SET title = 'one, renamed' WHERE id = 1;
            DELETE FROM recordings WHERE id = 2;
            INSERT INTO recordings VALUES (4, 'four', 'u2', 4.0, X'FF');
            INSERT INTO recordings VALUES (5, 'five, gone again', NULL, NULL, NULL); DELETE FROM recordings WHERE id = 5;
            UPDATE recordings SET duration = 9.0 WHERE id = 3; DELETE FROM recordings WHERE id = 3;
            INSERT INTO shares VALUES (4, 'u3', 'editor');
            """)
        let date = Date(timeIntervalSince1970: 1_790_000_000)
        let diff = try #require(try recorder.writeDiff(to: folder, sender: "u1", id: try KSUID(date: date), createdAt: date))
        let summary = try DiffSummary(contentsOf: diff, now: date)
        #expect(summary.tables.map { "\($0.definition.name) \($0.upserts)/\($0.deletes)" } == ["recordings 2/2", "shares 1/0"])
        _ = try DiffApplier.apply(diff, to: try SQLiteConnection(path: copy.path), options: ApplyOptions(), now: date)
        #expect(try DB.dump(copy) == DB.dump(app))
        // Nothing changed since: no diff.
        let quiet = try ChangeRecorder(recording: connection)
        #expect(try quiet.writeDiff(to: folder, sender: "u1", id: try KSUID(date: date)) == nil)
    }
}
