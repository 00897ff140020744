#if canImport(CCurl)
import BuckiaCore
import Foundation

/// The hand-over between a streamed transfer's write callback (on the loop thread) and the
/// task reading the body: a queue of chunks bounded by a high-water mark.
///
/// Above the mark the callback pauses the transfer (libcurl keeps the bytes and offers them
/// again); once the reader has taken the queue below the low-water mark the loop resumes it.
/// So a slow reader holds at most a few MiB in memory, and the server's socket simply fills.
final class CurlBodyBuffer: Sendable {
    private struct State {
        var chunks: [Data] = []
        var buffered = 0
        var end: Result<Void, any Error>?
        var waiter: CheckedContinuation<Data?, any Error>?
        var paused = false
        var abandoned = false
    }

    /// Bytes queued before the transfer is paused, and the level it resumes below.
    static let highWater = 4 << 20
    static let lowWater = 1 << 20

    private let state = Locked(State())
    private let resume: @Sendable () -> Void
    private let abandonTransfer: @Sendable () -> Void

    /// - Parameters:
    ///   - resume: Asks the loop to resume the paused transfer.
    ///   - abandon: Asks the loop to end the transfer (the reader stopped).
    init(resume: @escaping @Sendable () -> Void, abandon: @escaping @Sendable () -> Void) {
        self.resume = resume
        abandonTransfer = abandon
    }

    /// Whether the transfer is paused because the reader is behind (the stall timer waits).
    var isPaused: Bool { state.withLock { $0.paused } }

    /// Offers bytes from the write callback (loop thread). False means "pause": the queue is
    /// full and the bytes were not taken.
    func offer(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let (accepted, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Data?, any Error>?) in
            if state.abandoned { return (true, nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (true, waiter)
            }
            guard state.buffered < Self.highWater else {
                state.paused = true
                return (false, nil)
            }
            state.chunks.append(Data(bytes))
            state.buffered += bytes.count
            return (true, nil)
        }
        waiter?.resume(returning: Data(bytes))
        return accepted
    }

    /// Ends the body (loop thread): nil after the queued chunks, or the error.
    func finish(_ result: Result<Void, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Data?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = result
            defer { state.waiter = nil }
            return state.waiter
        }
        guard let waiter else { return }
        switch result {
        case .success: waiter.resume(returning: nil)
        case .failure(let error): waiter.resume(throwing: error)
        }
    }

    /// The next chunk, waiting for one; nil at the end.
    func next() async throws -> Data? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
                enum Step { case chunk(Data, resume: Bool), end(Result<Void, any Error>), abandoned, wait }
                let step = state.withLock { state -> Step in
                    if !state.chunks.isEmpty {
                        let chunk = state.chunks.removeFirst()
                        state.buffered -= chunk.count
                        let resume = state.paused && state.buffered < Self.lowWater
                        if resume { state.paused = false }
                        return .chunk(chunk, resume: resume)
                    }
                    if let end = state.end { return .end(end) }
                    if state.abandoned { return .abandoned }
                    state.waiter = continuation
                    return .wait
                }
                switch step {
                case .chunk(let chunk, let resume):
                    if resume { self.resume() }
                    continuation.resume(returning: chunk)
                case .end(.success): continuation.resume(returning: nil)
                case .end(.failure(let error)): continuation.resume(throwing: error)
                case .abandoned: continuation.resume(throwing: HTTPTransportError(code: .cancelled))
                case .wait: break
                }
            }
        } onCancel: {
            abandon()
        }
    }

    /// The reader stops: queued bytes are dropped, a waiting read ends as cancelled, and the
    /// transfer is ended.
    func abandon() {
        let (first, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Data?, any Error>?) in
            guard !state.abandoned else { return (false, nil) }
            state.abandoned = true
            state.chunks = []
            state.buffered = 0
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume(throwing: HTTPTransportError(code: .cancelled))
        if first { abandonTransfer() }
    }
}
#endif
