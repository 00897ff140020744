import Buckia
import Foundation

/// A one-line live display of a transfer on a terminal's standard error, redrawn in place:
/// bytes and files done out of the total, the rate and the time left (rclone's `-P` is the
/// model). Off a terminal nothing is drawn.
final class ProgressDisplay: Sendable {
    private struct State {
        var files = 0, filesDone = 0, failed = 0
        var bytes: Int64 = 0, bytesDone: Int64 = 0
        /// Bytes heard of for each file in flight, capped at its size when that is known.
        var inFlight: [ObjectKey: (moved: Int64, size: Int64?)] = [:]
        var lastDraw: ContinuousClock.Instant?
        var drawn = false
    }

    private let state = Locked(State())
    private let started = ContinuousClock.now
    /// What the line is about, such as "Synced" or "Copied".
    private let verb: String
    /// The shortest time between redraws.
    private static let interval: Duration = .milliseconds(200)

    /// A display, or nil when standard error is not a terminal.
    init?(verb: String, enabled: Bool = Console.errorIsTerminal) {
        guard enabled else { return nil }
        self.verb = verb
    }

    /// Sets the totals the display counts towards.
    func expect(files: Int, bytes: Int64) {
        state.withLock {
            $0.files = files
            $0.bytes = bytes
        }
        draw()
    }

    /// A file started; `size` is its expected size when known.
    func started(_ path: ObjectKey, size: Int64?) {
        state.withLock { $0.inFlight[path] = (0, size) }
        draw()
    }

    /// Bytes moved for a file in flight.
    func moved(_ path: ObjectKey, bytes: Int64) {
        state.withLock { state in
            guard let current = state.inFlight[path] else { return }
            let moved = current.moved + bytes
            state.inFlight[path] = (current.size.map { min($0, moved) } ?? moved, current.size)
        }
        draw()
    }

    /// A file finished (or failed) after moving `bytes`.
    func finished(_ path: ObjectKey, bytes: Int64, failed: Bool = false) {
        state.withLock { state in
            state.inFlight[path] = nil
            state.filesDone += 1
            if failed { state.failed += 1 } else { state.bytesDone += bytes }
        }
        draw()
    }

    /// Handles a sync event.
    func handle(_ event: SyncEvent) {
        switch event {
        case .planned(let summary): expect(files: summary.transfers, bytes: summary.bytes)
        case .started(let action, let bytes): if action.isTransfer { started(action.path, size: bytes) }
        case .progress(let path, let bytes): moved(path, bytes: bytes)
        case .finished(let action, let bytes): if action.isTransfer { finished(action.path, bytes: bytes) }
        case .failed(let action, _): if action.isTransfer { finished(action.path, bytes: 0, failed: true) }
        default: break
        }
    }

    /// Erases the line, so the summary that follows starts clean.
    func finish() {
        let drawn = state.withLock { state -> Bool in
            defer { state.drawn = false }
            return state.drawn
        }
        if drawn { Console.errorInline("\r\u{1B}[K") }
    }

    private func draw() {
        let now = ContinuousClock.now
        let line: String? = state.withLock { state in
            if let last = state.lastDraw, now - last < Self.interval { return nil }
            state.lastDraw = now
            state.drawn = true
            let done = state.bytesDone + state.inFlight.values.reduce(0) { $0 + $1.moved }
            let elapsed = Double((now - started).components.seconds) + Double((now - started).components.attoseconds) / 1e18
            let rate = elapsed > 0.5 ? Double(done) / elapsed : 0
            var text = "\(verb) \(ByteCount.format(done))"
            if state.bytes > 0 {
                text += " / \(ByteCount.format(state.bytes)), \(min(100, done * 100 / max(1, state.bytes)))%"
            }
            if rate > 0 {
                text += ", \(ByteCount.format(Int64(rate)))/s"
                if state.bytes > done { text += ", ETA \(ByteCount.duration(Double(state.bytes - done) / rate))" }
            }
            text += " · files \(state.filesDone)/\(state.files)"
            if state.failed > 0 { text += " · \(state.failed) failed" }
            return text
        }
        if let line { Console.errorInline("\r\u{1B}[K" + line) }
    }
}

/// Sizes and durations as people read them.
enum ByteCount {
    /// `1.5 MiB`, `830 B`.
    static func format(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let tenths = Int((value * 10).rounded())
        return unit == 0 ? "\(bytes) B" : "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }

    /// `45s`, `3m12s`, `2h05m`.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "-" }
        let total = Int(seconds.rounded())
        if total < 60 { return "\(total)s" }
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        if total < 3600 { return "\(total / 60)m\(two(total % 60))s" }
        return "\(total / 3600)h\(two((total % 3600) / 60))m"
    }
}

extension SyncAction {
    /// Whether the step moves a file's bytes.
    var isTransfer: Bool {
        switch self {
        case .upload, .download, .conflict: true
        default: false
        }
    }
}
