import BuckiaTestSupport
import Foundation
import Testing

/// `buckia sync --watch` between two local folders, acted on while it runs. Every wait is a
/// bounded poll of the destination (at most 60 s), never a timing: the check is that the
/// destination converges after each burst, not how fast. The polling interval is an hour, so
/// every pass after the first is one the folder's events started.
@Suite("buckia sync --watch", .serialized)
struct SyncWatchTests {
    @Test(
        "Bursts of writes, renames and deletes reach the destination; a file still being written is held back until closed; a killed watch started again loses nothing",
        .timeLimit(.minutes(15)))
    func bursts() throws {
        let home = try BackgroundHome()
        let source = home.home.appendingPathComponent("source")
        let destination = home.home.appendingPathComponent("destination")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        func write(_ text: String, _ path: String) throws {
            let url = source.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        let events = home.home.appendingPathComponent("out/events.jsonl")
        func watch() throws -> BuckiaProcess {
            _ = FileManager.default.createFile(atPath: events.path, contents: nil)
            return try home.start(
                "sync", source.path, destination.path, "--watch", "--delete", "--debounce", "200ms", "--poll", "1h", "--json",
                stdout: try FileHandle(forWritingTo: events))
        }
        var watcher = try watch()
        func converges(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
            // A tree read while files change under it may fail; that is only "not yet".
            let done = watcher.poll(until: { (try? Self.tree(destination)) == (try? Self.tree(source)) }, polls: 60_000)
            #expect(done, "\(what): the destination did not converge; stderr: \(watcher.errorText)", sourceLocation: sourceLocation)
        }

        // A burst of new files in nested folders.
        for n in 0..<40 { try write("file \(n)", "album/\(n % 4)/\(n).txt") }
        try write("notes", "notes.txt")
        converges("after 41 new files")

        // A folder renamed, files deleted and edited, all at once.
        try FileManager.default.moveItem(at: source.appendingPathComponent("album/0"), to: source.appendingPathComponent("renamed"))
        for n in [1, 5, 9] { try FileManager.default.removeItem(at: source.appendingPathComponent("album/1/\(n).txt")) }
        try write("notes, edited", "notes.txt")
        converges("after a rename, three deletes and an edit")
        #expect(try String(contentsOf: events, encoding: .utf8).contains("\"action\":\"moveInDestination\""), "the renamed folder was not moved")

        // A file a program is still writing is held back, however many passes run meanwhile.
        let growing = source.appendingPathComponent("growing.bin")
        _ = FileManager.default.createFile(atPath: growing.path, contents: nil)
        let handle = try FileHandle(forWritingTo: growing)
        try handle.write(contentsOf: Data(repeating: 1, count: 64 * 1024))
        try write("after", "trigger.txt")
        let passed = watcher.poll(until: { FileManager.default.fileExists(atPath: destination.appendingPathComponent("trigger.txt").path) })
        #expect(passed, "no pass ran after the trigger")
        #expect(!FileManager.default.fileExists(atPath: destination.appendingPathComponent("growing.bin").path), "a file still being written was sent")
        try handle.write(contentsOf: Data(repeating: 2, count: 64 * 1024))
        try handle.close()
        converges("after the growing file was closed")

        // Killed, changed while it was down, started again: the first pass carries it all.
        kill(watcher.pid, SIGKILL)
        #expect(throws: BuckiaProcess.Failure.self, "the killed watch did not die of the signal") { try watcher.wait() }
        try write("while down", "down.txt")
        try FileManager.default.removeItem(at: source.appendingPathComponent("album/2"))
        watcher = try watch()
        converges("after a restart")

        // SIGTERM stops it cleanly.
        kill(watcher.pid, SIGTERM)
        let status = try watcher.wait()
        #expect(status == 0 && watcher.errorText.contains("stopped watching"), "exit \(status): \(watcher.errorText)")
    }

    /// Every file under `folder` with its bytes, by relative path.
    static func tree(_ folder: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) else { return files }
        for case let url as URL in walker where try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true {
            files[String(url.path.dropFirst(folder.path.count + 1))] = try Data(contentsOf: url)
        }
        return files
    }
}
