import Buckia
import Foundation
import Testing

/// The disk and SQLite engines write on Buckia's blocking-work threads (issue 23), which check
/// the awaiting task's cancellation before a job starts: a write a cancelled task asks for
/// is refused and changes nothing. (Run on the calling task, as they once were, these writes
/// went through.)
@Suite("Engine writes off the cooperative pool")
struct EngineBlockingWorkTests {
    enum Kind: String, CaseIterable, Sendable { case sqlite, disk }

    @Test("A write or removal (of one, some or all values) asked for by a cancelled task fails as cancelled and changes nothing", arguments: Kind.allCases)
    func cancelledWrites(_ kind: Kind) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-engine-cancel-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine: any StorageEngine = switch kind {
        case .sqlite: try SQLiteStorageEngine(directory: folder)
        case .disk: try DiskStorageEngine(directory: folder)
        }
        try await engine.write(Data("kept".utf8), key: CacheKey(verbatim: "kept"))
        // Cancelled before it starts: every call it makes sees a cancelled task.
        let task = Task {
            var codes: [BuckiaError.Code?] = []
            for attempt in 0..<5 {
                do {
                    switch attempt {
                    case 0: try await engine.write(Data("new".utf8), key: CacheKey(verbatim: "new"))
                    case 1: try await engine.write([(CacheKey(verbatim: "batch"), Data("b".utf8))])
                    case 2: try await engine.remove(key: CacheKey(verbatim: "kept"))
                    case 3: try await engine.remove(keys: [CacheKey(verbatim: "kept")])
                    default: try await engine.removeAllData()
                    }
                    codes.append(nil)
                } catch {
                    codes.append((error as? BuckiaError)?.code)
                }
            }
            return codes
        }
        task.cancel()
        #expect(await task.value == [.cancelled, .cancelled, .cancelled, .cancelled, .cancelled])
        #expect(try await engine.allKeys() == [CacheKey(verbatim: "kept")])
        #expect(try await engine.read(key: CacheKey(verbatim: "kept")) == Data("kept".utf8))
    }
}
