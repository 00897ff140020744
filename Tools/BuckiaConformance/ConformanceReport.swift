import Foundation

/// The outcome of running a suite against one subject, printable as a table.
public struct ConformanceReport: Sendable {
    /// One scenario's result.
    public struct Row: Sendable {
        public var name: String
        public var contract: String
        public var outcome: ScenarioOutcome
        public var duration: Duration
    }

    /// What was tested (a provider type, a remote name).
    public var subject: String
    /// One row per scenario, in run order.
    public var rows: [Row]

    /// How many scenarios passed, were skipped and failed.
    public var counts: (passed: Int, skipped: Int, failed: Int) {
        rows.reduce(into: (0, 0, 0)) { counts, row in
            switch row.outcome {
            case .passed: counts.0 += 1
            case .skipped: counts.1 += 1
            case .failed: counts.2 += 1
            }
        }
    }

    /// Whether no scenario failed.
    public var succeeded: Bool { counts.failed == 0 }

    /// The report as an aligned text table, with failure and skip reasons under it.
    public func table() -> String {
        let width = max(8, rows.map(\.name.count).max() ?? 0)
        var lines = ["\("SCENARIO".padding(toLength: width, withPad: " ", startingAt: 0))  RESULT  TIME"]
        for row in rows {
            let seconds = Double(row.duration.components.seconds) + Double(row.duration.components.attoseconds) / 1e18
            let name = row.name.padding(toLength: width, withPad: " ", startingAt: 0)
            lines.append("\(name)  \(row.outcome.label.padding(toLength: 6, withPad: " ", startingAt: 0))  \(String(format: "%.2fs", seconds))")
        }
        for row in rows {
            switch row.outcome {
            case .failed(let message): lines.append("FAIL \(row.name): \(message)")
            case .skipped(let reason): lines.append("skip \(row.name): \(reason)")
            case .passed: continue
            }
        }
        let (passed, skipped, failed) = counts
        lines.append("\(subject): \(passed) passed, \(failed) failed, \(skipped) skipped")
        return lines.joined(separator: "\n")
    }

    /// Runs `scenarios` in order through `run`, timing each, and reports them.
    package static func collect<Scenario: ConformanceScenario>(
        subject: String, scenarios: [Scenario], progress: (@Sendable (Scenario, ScenarioOutcome, Duration) -> Void)?,
        run: (Scenario) async -> ScenarioOutcome
    ) async -> ConformanceReport {
        var rows: [Row] = []
        for scenario in scenarios {
            let clock = ContinuousClock()
            let start = clock.now
            let outcome = await run(scenario)
            let elapsed = clock.now - start
            progress?(scenario, outcome, elapsed)
            rows.append(Row(name: scenario.name, contract: scenario.contract, outcome: outcome, duration: elapsed))
        }
        return ConformanceReport(subject: subject, rows: rows)
    }
}
