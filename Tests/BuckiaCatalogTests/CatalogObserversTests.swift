@testable import BuckiaCatalog
import BuckiaCore
import Foundation
import Testing

/// The live queries' readers when a list cannot be made. Finishing a stream runs its
/// termination handler, which takes the readers' lock: a stream finished while that lock was
/// held deadlocked the caller (a refused query's first list did, before these tests). Such a
/// build blocks the test's own thread, so no time limit can end it: it hangs, and the run's
/// watchdog (Tools/test) stops it and fails the run.
@Suite("Catalog live-query readers")
struct CatalogObserversTests {
    struct Refused: Error, Equatable {}

    @Test("A reader whose first list fails gets the error, and the next reader is served", .timeLimit(.minutes(10)))
    func failingFirstList() async throws {
        let observers = CatalogObservers()
        let (refused, refusedContinuation) = CatalogObservers.makeStream()
        observers.add(refusedContinuation, query: FileQuery(limit: -1)) { _ in throw Refused() }
        await #expect(throws: Refused.self) { for try await _ in refused {} }
        #expect(!observers.isWatched)

        let (served, servedContinuation) = CatalogObservers.makeStream()
        observers.add(servedContinuation) { _ in [] }
        #expect(observers.isWatched)
        observers.publish { _ in [FileRecord(fileId: "a", key: "a")] }
        var lists = served.makeAsyncIterator()
        // Coalesced to the newest list: the one published.
        #expect(try await lists.next()?.map(\.fileId) == ["a"])
    }

    @Test("A list that fails to be made ends every reader's stream with its error", .timeLimit(.minutes(10)))
    func failingPublish() async throws {
        let observers = CatalogObservers()
        let (first, firstContinuation) = CatalogObservers.makeStream()
        let (second, secondContinuation) = CatalogObservers.makeStream()
        observers.add(firstContinuation) { _ in [] }
        observers.add(secondContinuation, query: FileQuery(order: .key)) { _ in [] }
        observers.publish { _ in throw Refused() }
        #expect(!observers.isWatched)
        for stream in [first, second] {
            var lists = stream.makeAsyncIterator()
            #expect(try await lists.next() == [])
            await #expect(throws: Refused.self) { _ = try await lists.next() }
        }
    }
}
