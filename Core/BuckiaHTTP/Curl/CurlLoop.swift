#if canImport(CCurl)
import BuckiaCore
import CCurl
import Foundation

/// One thread driving every transfer of a ``CurlTransport`` through libcurl's multi interface:
/// no thread per request, connections kept alive and shared between requests to one host.
///
/// Other threads never touch the multi handle. They hand transfers in (and ask for their
/// cancellation) through a locked inbox and wake the loop with `curl_multi_wakeup`; the loop
/// adds them, runs them, and completes each one's continuation when libcurl says it is done.
final class CurlLoop: @unchecked Sendable {  // the multi handle only on the loop thread; the rest under `inbox`
    private struct Inbox {
        var added: [CurlTransfer] = []
        var cancelled: [CurlTransfer] = []
        var resumed: [CurlTransfer] = []
        var stopping = false
        var stopped = false
        /// The loop thread's kernel id, once it runs.
        var threadID: Int32?
        /// Who waits for the thread to end.
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let multi: UnsafeMutableRawPointer
    private let inbox = Locked(Inbox())
    /// The transfers libcurl is running, by easy handle (loop thread only).
    private var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// The loop thread: a pthread rather than a Foundation `Thread`, so that shutting down can
    /// join it (and it is gone from the process when ``stopAndWait()`` returns).
    private var thread = pthread_t()
    /// Whether the thread has been joined (or never started). Held while joining, so a second
    /// ``stopAndWait()`` returns only once the thread is gone.
    private let joinState = Locked(false)

    /// Starts the loop's thread.
    ///
    /// - Parameter maximumConnectionsPerHost: The most connections open to one host at once;
    ///   further transfers to it wait for one to be free.
    init(maximumConnectionsPerHost: Int) throws {
        CurlLoop.initializeLibrary
        guard let multi = curl_multi_init() else {
            throw BuckiaError(.io, "libcurl could not create a multi handle (out of memory?).", operation: "http")
        }
        self.multi = multi
        let perHost = max(1, maximumConnectionsPerHost)
        _ = buckia_curl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, perHost)
        _ = buckia_curl_multi_set_long(multi, CURLMOPT_MAXCONNECTS, max(perHost * 2, 8))
        // The thread holds the loop until its run ends.
        let context = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&thread, nil, { context in
            guard let context else { return nil }
            Unmanaged<CurlLoop>.fromOpaque(context).takeRetainedValue().run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<CurlLoop>.fromOpaque(context).release()
            // No thread to join or detach when deinit runs.
            joinState.withLock { $0 = true }
            inbox.withLock { $0.stopped = true }
            curl_multi_cleanup(multi)
            throw BuckiaError(
                .io, "The HTTP transport's thread could not be started (\(String(cString: strerror(status)))).", operation: "http")
        }
    }

    deinit {
        // Whoever did not join the thread lets it go: this runs on the loop thread itself when
        // its run ends holding the last reference.
        if !joinState.withLock({ $0 }) { pthread_detach(thread) }
    }

    /// libcurl's global setup, once per process, before any handle exists.
    private static let initializeLibrary: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Hands a configured transfer to the loop; one handed to a stopped loop completes at once
    /// as cancelled.
    func submit(_ transfer: CurlTransfer) {
        let accepted = inbox.withLock { box -> Bool in
            guard !box.stopping else { return false }
            box.added.append(transfer)
            curl_multi_wakeup(multi)
            return true
        }
        if !accepted { transfer.refuse() }
    }

    /// Asks the loop to abandon `transfer`; it completes with `cancelled`.
    func cancel(_ transfer: CurlTransfer) {
        inbox.withLock { box in
            guard !box.stopped else { return }
            box.cancelled.append(transfer)
            curl_multi_wakeup(multi)
        }
    }

    /// Asks the loop to resume `transfer`, paused while its reader was behind.
    func resume(_ transfer: CurlTransfer) {
        inbox.withLock { box in
            guard !box.stopped else { return }
            box.resumed.append(transfer)
            curl_multi_wakeup(multi)
        }
    }

    /// Ends the loop once the transfers in flight are done; no new ones are taken.
    func stop() {
        inbox.withLock { box in
            box.stopping = true
            // The multi handle is freed once the loop has stopped; it is woken under the lock
            // that guards that.
            if !box.stopped { curl_multi_wakeup(multi) }
        }
    }

    /// Stops the loop and returns once its thread has ended.
    func stopAndWait() async {
        await withCheckedContinuation { continuation in
            let done = inbox.withLock { box -> Bool in
                box.stopping = true
                if box.stopped { return true }
                box.waiters.append(continuation)
                curl_multi_wakeup(multi)
                return false
            }
            if done { continuation.resume() }
        }
        // The thread resumed us as its last act; joining waits out only its return.
        joinState.withLock { joined in
            guard !joined else { return }
            pthread_join(thread, nil)
            joined = true
        }
    }

    /// The kernel's id of the loop thread (an entry of `/proc/self/task`), once it has started.
    var threadID: Int32? { inbox.withLock { $0.threadID } }

    private func run() {
        SystemCalls.nameThread("buckia-curl")
        let id = SystemCalls.threadID()
        inbox.withLock { $0.threadID = id }
        while true {
            let (added, cancelled, resumed, stopping) = inbox.withLock { box in
                defer {
                    box.added.removeAll()
                    box.cancelled.removeAll()
                    box.resumed.removeAll()
                }
                return (box.added, box.cancelled, box.resumed, box.stopping)
            }
            for transfer in added {
                if transfer.isCancelled {
                    transfer.finish(code: CURLE_ABORTED_BY_CALLBACK)
                    continue
                }
                guard curl_multi_add_handle(multi, transfer.easy) == CURLM_OK else {
                    transfer.finish(code: CURLE_OUT_OF_MEMORY)
                    continue
                }
                running[transfer.easy] = transfer
            }
            for transfer in cancelled where running.removeValue(forKey: transfer.easy) != nil {
                curl_multi_remove_handle(multi, transfer.easy)
                transfer.finish(code: CURLE_ABORTED_BY_CALLBACK)
            }
            for transfer in resumed where running[transfer.easy] != nil {
                transfer.restartStallClock()
                _ = buckia_curl_resume(transfer.easy)
            }
            if stopping {
                // A streamed body goes at its reader's pace, and a reader that has stopped
                // reading would hold the shutdown forever: it ends as cancelled instead.
                for (easy, transfer) in running where transfer.isStreamingBody {
                    running.removeValue(forKey: easy)
                    curl_multi_remove_handle(multi, easy)
                    transfer.finish(code: CURLE_ABORTED_BY_CALLBACK)
                }
                if running.isEmpty { break }
            }
            var active: Int32 = 0
            curl_multi_perform(multi, &active)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                var handle: UnsafeMutableRawPointer?
                var result = CURLE_OK
                guard buckia_curl_message_done(message, &handle, &result) != 0, let handle,
                      let transfer = running.removeValue(forKey: handle)
                else { continue }
                curl_multi_remove_handle(multi, handle)
                transfer.finish(code: result)
            }
            // Sleeps until a socket is ready, a timer is due, or another thread wakes it.
            curl_multi_poll(multi, nil, 0, 1_000, nil)
        }
        let waiters = inbox.withLock { box -> [CheckedContinuation<Void, Never>] in
            box.stopped = true
            // Nothing is left in the inbox: `submit` refuses transfers once `stopping` is set,
            // and the loop saw `stopping` with the inbox it emptied.
            curl_multi_cleanup(multi)
            defer { box.waiters.removeAll() }
            return box.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
#endif
