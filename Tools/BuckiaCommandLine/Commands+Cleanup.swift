import Buckia
import Foundation

extension CLI {
    static let cleanupCommand = Command(
        name: "cleanup", summary: "Abort unfinished uploads (S3 multipart uploads) left on a remote.",
        usage: "cleanup REMOTE:[PATH] [--dry-run] [--max-age DURATION]", positionals: 1...1,
        options: [
            .flag("dry-run", "Say what would be aborted; abort nothing."),
            .value("max-age", "Abort uploads of unknown origin only once they are this old: 30m, 12h, 7d, 0s (default 24h, as rclone)."),
        ],
        details: """
            Uploads this machine started and can still resume are kept (run the same copy again to \
            finish them); those it can never resume (their file changed or is gone) are aborted \
            whatever their age; any other is aborted once older than --max-age, since it may be \
            another process's upload in progress.
            """
    ) { invocation in
        guard case .remote(let name, let path) = Location(invocation.positionals[0]) else {
            throw UsageError(description: "cleanup needs a remote such as photos: or photos:2026/")
        }
        let maxAge = try parseDuration(invocation.arguments.value("max-age") ?? "24h", option: "max-age", allowsZero: true, maximum: nil)
        let dryRun = invocation.arguments.flag("dry-run")
        let (provider, configuration) = try invocation.provider(named: name)
        guard provider.capabilities.supports(.unfinishedUploads) else {
            Console.out("Remote \(name) (provider \(configuration.provider)) leaves no unfinished uploads; nothing to clean up.")
            return .success
        }
        let cutoff = Date().addingTimeInterval(-Double(maxAge.components.seconds))
        var aborted = 0
        var failed = 0
        var kept = 0
        for upload in try await provider.unfinishedUploads(prefix: path.trimmedSlashes.isEmpty ? "" : path) {
            let started = upload.initiated.map { "started \($0.formatted(.iso8601))" } ?? "start time unknown"
            let label = "\(upload.key.terminalSafe) (\(started))"
            let abort: Bool
            switch upload.status {
            case .resumable:
                Console.out("Kept \(label): resumable; run the same copy again to finish it.")
                abort = false
            case .abandoned:
                abort = true
            case .unknown:
                abort = upload.initiated.map { $0 <= cutoff } ?? (maxAge == .zero)
                if !abort { Console.out("Kept \(label): younger than --max-age, so it may still be in progress.") }
            }
            guard abort else {
                kept += 1
                continue
            }
            if dryRun {
                Console.out("Would abort \(label).")
                aborted += 1
                continue
            }
            do {
                try await provider.abortUpload(upload)
                Console.out("Aborted \(label).")
                aborted += 1
            } catch let error as BuckiaError {
                Console.error("buckia: \(error.message.escapingControlCharacters)")
                failed += 1
            }
        }
        let verb = dryRun ? "Would abort" : "Aborted"
        Console.out("\(verb) \(aborted) unfinished upload\(aborted == 1 ? "" : "s"); kept \(kept)\(failed > 0 ? "; \(failed) failed" : "").")
        return failed > 0 ? .failure : .success
    }
}
