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
final class CurlLoop: @unchecked Sendable {
    private struct Inbox {
        var added: [CurlTransfer] = []
        var cancelled: [CurlTransfer] = []
        var stopping = false
    }

    private let multi: UnsafeMutableRawPointer
    private let inbox = Locked(Inbox())
    /// The transfers libcurl is running, by easy handle (loop thread only).
    private var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]

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
        let thread = Thread { [self] in run() }
        thread.name = "buckia-curl"
        thread.start()
    }

    /// libcurl's global setup, once per process, before any handle exists.
    private static let initializeLibrary: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Hands a configured transfer to the loop.
    func submit(_ transfer: CurlTransfer) {
        inbox.withLock { $0.added.append(transfer) }
        curl_multi_wakeup(multi)
    }

    /// Asks the loop to abandon `transfer`; it completes with `cancelled`.
    func cancel(_ transfer: CurlTransfer) {
        inbox.withLock { $0.cancelled.append(transfer) }
        curl_multi_wakeup(multi)
    }

    /// Ends the loop once the transfers in flight are done; no new ones are taken.
    func stop() {
        inbox.withLock { $0.stopping = true }
        curl_multi_wakeup(multi)
    }

    private func run() {
        while true {
            let (added, cancelled, stopping) = inbox.withLock { box -> ([CurlTransfer], [CurlTransfer], Bool) in
                defer {
                    box.added.removeAll()
                    box.cancelled.removeAll()
                }
                return (box.added, box.cancelled, box.stopping)
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
            if stopping && running.isEmpty { break }
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
        curl_multi_cleanup(multi)
    }
}
#endif
