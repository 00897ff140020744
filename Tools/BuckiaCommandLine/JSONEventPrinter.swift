import Buckia
import Foundation

/// Prints sync events as JSON, one object per line on standard output (`--json`), for
/// scripts and other programs, in SOURCE → DESTINATION terms (the engine's first side is
/// SOURCE). Byte progress is coalesced to one line per 4 MiB of a file.
final class JSONEventPrinter: Sendable {
    private let pending = Locked<[ObjectKey: Int64]>([:])
    private static let progressStep: Int64 = 4 << 20

    func print(_ event: SyncEvent) {
        var object: [String: Any]
        switch event {
        case .listed(let local, let remote):
            object = ["event": "listed", "source": local, "destination": remote]
        case .planned(let summary):
            object = [
                "event": "planned", "copiesToDestination": summary.uploads, "bytesToDestination": summary.uploadBytes,
                "copiesToSource": summary.downloads, "bytesToSource": summary.downloadBytes, "deletesSource": summary.localDeletes,
                "deletesDestination": summary.remoteDeletes,
                "conflicts": summary.conflicts, "unchanged": summary.unchanged,
            ]
        case .started(let action, let bytes):
            object = Self.describe(action).merging(["event": "started", "bytes": bytes]) { $1 }
        case .progress(let path, let bytes):
            let due = pending.withLock { pending -> Int64? in
                let total = pending[path, default: 0] + bytes
                if total < Self.progressStep {
                    pending[path] = total
                    return nil
                }
                pending[path] = 0
                return total
            }
            guard let due else { return }
            object = ["event": "progress", "path": path.rawValue, "bytes": due]
        case .finished(let action, let bytes):
            pending.withLock { $0[action.path] = nil }
            object = Self.describe(action).merging(["event": "finished", "bytes": bytes]) { $1 }
        case .failed(let action, let error):
            pending.withLock { $0[action.path] = nil }
            object = Self.describe(action).merging(["event": "failed", "code": "\(error.code)", "message": error.message]) { $1 }
        case .conflict(let path, let resolution):
            object = ["event": "conflict", "path": path.rawValue, "resolution": Self.name(resolution)]
            if case .keepBoth(let copy) = resolution { object["copy"] = copy.rawValue }
        case .deletesSkipped(let reason):
            object = ["event": "deletesSkipped", "reason": reason]
        }
        emit(object)
    }

    /// The closing line: what the run did.
    func print(_ result: SyncResult) {
        var object: [String: Any] = [
            "event": "result", "copiedToDestination": result.uploaded, "bytesToDestination": result.bytesUploaded,
            "copiedToSource": result.downloaded, "bytesToSource": result.bytesDownloaded, "deletedSource": result.deletedLocal,
            "deletedDestination": result.deletedRemote, "movedSource": result.movedLocal, "movedDestination": result.movedRemote,
            "conflicts": result.conflicts, "unchanged": result.summary.unchanged, "failed": result.failures.map(\.path.rawValue),
            "unaddressable": result.unaddressable.map(\.displayName), "seconds": result.duration.seconds, "complete": result.isComplete,
        ]
        if let reason = result.deletesSkipped { object["deletesSkipped"] = reason }
        emit(object)
    }

    private func emit(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        Console.out(String(decoding: data, as: UTF8.self))
    }

    private static func describe(_ action: SyncAction) -> [String: Any] {
        let kind: String
        switch action {
        case .upload: kind = "copyToDestination"
        case .download: kind = "copyToSource"
        case .deleteLocal: kind = "deleteSource"
        case .deleteRemote: kind = "deleteDestination"
        case .record: kind = "record"
        case .forget: kind = "forget"
        case .conflict: kind = "conflict"
        case .moveRemote(let from, _): return ["action": "moveInDestination", "from": from.rawValue, "path": action.path.rawValue]
        case .moveLocal(let from, _): return ["action": "moveInSource", "from": from.rawValue, "path": action.path.rawValue]
        }
        return ["action": kind, "path": action.path.rawValue]
    }

    private static func name(_ resolution: ConflictResolution) -> String {
        switch resolution {
        case .upload: ConflictPolicy.sourceWins.rawValue
        case .download: ConflictPolicy.destinationWins.rawValue
        case .keepBoth: "keep-both"
        case .unresolved: "unresolved"
        }
    }
}
