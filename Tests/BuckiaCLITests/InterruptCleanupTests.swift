import Foundation
import Testing

/// SIGINT and SIGTERM during a `cp` remove its temporaries before it exits with 130 or 143.
///
/// The copy is of an 8 GiB sparse file, so it is still running when its temporary appears
/// (polled for, a bounded number of times); the signal goes then, and afterwards no
/// `.buckia-*.tmp` may be left anywhere in the test's home: not in the local remote's
/// `.buckia/tmp`, the download folder, nor the relay folder in `$TMPDIR`.
@Suite("Interrupted cp: temporaries removed, exit 130 or 143")
struct InterruptCleanupTests {
    enum Direction: String, CaseIterable, Sendable {
        case upload = "local file to a local remote"
        case download = "local remote to a local folder"
        case relay = "local remote to another remote (through $TMPDIR)"
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let direction: Direction
        let signal: Int32
        var testDescription: String { "\(signal == SIGINT ? "SIGINT" : "SIGTERM") during cp, \(direction.rawValue)" }
    }

    static let cases = Direction.allCases.flatMap { direction in [SIGINT, SIGTERM].map { Case(direction: direction, signal: $0) } }

    static let size: UInt64 = 8 << 30

    @Test("The temporaries are gone and the status is 128 + the signal", arguments: cases)
    func interrupted(_ entry: Case) throws {
        let world = try BackgroundHome()
        let source = entry.direction == .upload ? world.home.appendingPathComponent("big") : world.root.appendingPathComponent("big")
        try #require(FileManager.default.createFile(atPath: source.path, contents: nil))
        let file = try FileHandle(forWritingTo: source)
        try file.truncate(atOffset: Self.size)
        try file.close()
        let copy: BuckiaProcess
        switch entry.direction {
        case .upload: copy = try world.start("cp", source.path, "k:big")
        case .download: copy = try world.start("cp", "k:big", world.home.appendingPathComponent("out/big").path)
        case .relay: copy = try world.start("cp", "k:big", "default:big")
        }
        let started = copy.poll(until: { !world.temporaries().isEmpty })
        try #require(started, "no temporary appeared while cp ran: \(copy.errorText)")
        kill(copy.pid, entry.signal)
        let status = try copy.wait()
        #expect(status == 128 + entry.signal, "exit \(status): \(copy.errorText)")
        #expect(copy.errorText.contains("interrupted"), "stderr: \(copy.errorText)")
        #expect(world.temporaries().isEmpty, "left behind: \(world.temporaries())")
        let destination = ["root/big", "out/big", "data/buckia/default/big"][Direction.allCases.firstIndex(of: entry.direction) ?? 0]
        #expect(!FileManager.default.fileExists(atPath: world.home.appendingPathComponent(destination).path), "a partial \(destination) exists")
    }
}
