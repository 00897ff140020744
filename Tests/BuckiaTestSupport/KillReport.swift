import Foundation

/// What one kill harness did, written under the package's `.build/reliability/` for
/// `Tools/fuzz/reliability`, which tabulates the kill points each component survived.
public struct KillReport: Codable, Sendable {
    /// The component and the work killed, for example `sync push` or `chunk put (folder store)`.
    public var component: String
    /// SIGKILLs sent.
    public var kills: Int
    /// Of those, the ones that landed while the process was still running.
    public var midRun: Int
    /// Invariants found broken (after a kill or after its rerun); each one fails the test.
    public var violations: Int
    /// The seed that replays the run (`BUCKIA_KILL_SEED`).
    public var seed: UInt64
    /// What each kill was followed by: the checks and the rerun, in a few words.
    public var checks: String

    public init(component: String, kills: Int, midRun: Int, violations: Int, seed: UInt64, checks: String) {
        self.component = component
        self.kills = kills
        self.midRun = midRun
        self.violations = violations
        self.seed = seed
        self.checks = checks
    }

    /// Writes `kills-<component>.json`; a report that cannot be written is printed instead
    /// (the harness's own result does not depend on it).
    public func write() {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/reliability")
        let slug = String(component.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(self).write(to: folder.appendingPathComponent("kills-\(slug).json"), options: .atomic)
        } catch {
            print("kill report for \(component) not written (\(error)): \(self)")
        }
    }
}
