import Foundation

/// Fast incompressible bytes (xorshift64), for large test and benchmark files that
/// deduplication and compression must find nothing in by accident.
public struct RandomBytes: Sendable {
    private var state: UInt64

    /// A stream from `seed` (0 is taken as 1: xorshift needs a non-zero state).
    public init(seed: UInt64) { state = seed == 0 ? 1 : seed }

    /// Fills `buffer` with the next bytes of the stream (whole 8-byte words; a tail is left).
    public mutating func fill(_ buffer: inout [UInt8]) {
        var state = self.state
        buffer.withUnsafeMutableBytes { raw in
            for word in 0..<(raw.count / 8) {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                raw.storeBytes(of: state, toByteOffset: word * 8, as: UInt64.self)
            }
        }
        self.state = state
    }

    /// Writes `mebibytes` MiB of the stream to a new file at `url`, 1 MiB at a time.
    public mutating func writeFile(_ url: URL, mebibytes: Int) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var block = [UInt8](repeating: 0, count: 1 << 20)
        for _ in 0..<mebibytes {
            fill(&block)
            try handle.write(contentsOf: block)
        }
    }
}
