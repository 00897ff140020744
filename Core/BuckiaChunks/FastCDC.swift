import BuckiaCore
import Foundation

/// Content-defined chunking with FastCDC as published in 2020: a gear hash rolled over the
/// bytes, normalized chunking (a stricter mask before the average size, a looser one after),
/// and two bytes per step.
///
/// Boundaries depend only on nearby content, so an edit moves the boundaries around it and no
/// others: storing a changed file writes only the chunks that changed. The table, masks and
/// cut rule are the published ones, so the same bytes cut at the same places as in
/// fastcdc-rs (its v2020 module) and pyfastcdc; the tests check that against pyfastcdc.
public struct FastCDC: Hashable, Sendable, Codable {
    /// No chunk is smaller, except the last of a stream.
    public let minimumSize: Int
    /// The size the masks aim at (the paper's "expected" size; chunks average about
    /// `minimumSize + averageSize`, as the paper's cut-point skipping implies).
    public let averageSize: Int
    /// No chunk is larger.
    public let maximumSize: Int
    /// The normalization level (0 to 3): how many bits the masks before and after the
    /// average differ from it by.
    public let normalization: Int

    private let maskSmall: UInt64
    private let maskLarge: UInt64

    /// The bounds pyfastcdc and fastcdc-rs accept.
    public static let minimumSizeRange = 64...1_048_576
    /// The bounds pyfastcdc and fastcdc-rs accept.
    public static let averageSizeRange = 256...4_194_304
    /// The bounds pyfastcdc and fastcdc-rs accept.
    public static let maximumSizeRange = 1024...16_777_216

    /// 64 KiB average, 16 KiB minimum, 256 KiB maximum, normalization 1: Buckia's default.
    public static let standard = FastCDC(uncheckedAverage: 65_536, minimum: 16_384, maximum: 262_144, normalization: 1)

    /// A chunker; the minimum defaults to a quarter of the average and the maximum to four
    /// times it, as in pyfastcdc.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for sizes outside the published
    ///   bounds or out of order, or a normalization outside 0...3.
    public init(averageSize: Int = 65_536, minimumSize: Int? = nil, maximumSize: Int? = nil, normalization: Int = 1) throws {
        let minimum = minimumSize ?? averageSize / 4
        let maximum = maximumSize ?? averageSize.multipliedReportingOverflow(by: 4).partialValue
        func check(_ ok: Bool, _ message: String) throws {
            if !ok { throw BuckiaError(.invalidConfiguration, message, operation: "configure chunking") }
        }
        try check(Self.averageSizeRange.contains(averageSize), "The average chunk size is \(averageSize); use 256 to 4194304 bytes.")
        try check(Self.minimumSizeRange.contains(minimum), "The minimum chunk size is \(minimum); use 64 to 1048576 bytes.")
        try check(Self.maximumSizeRange.contains(maximum), "The maximum chunk size is \(maximum); use 1024 to 16777216 bytes.")
        try check(minimum <= averageSize && averageSize <= maximum, "Chunk sizes must be ordered minimum ≤ average ≤ maximum; they are \(minimum), \(averageSize), \(maximum).")
        try check((0...3).contains(normalization), "The normalization level is \(normalization); use 0 to 3.")
        self.init(uncheckedAverage: averageSize, minimum: minimum, maximum: maximum, normalization: normalization)
    }

    private init(uncheckedAverage average: Int, minimum: Int, maximum: Int, normalization: Int) {
        averageSize = average
        minimumSize = minimum
        maximumSize = maximum
        self.normalization = normalization
        // Rounded base-2 logarithm, as fastcdc-rs computes it: 65,536 → 16.
        let bits = Int(log2(Double(average)).rounded())
        maskSmall = Self.masks[bits + normalization]
        maskLarge = Self.masks[bits - normalization]
    }

    private static let gearShifted: [UInt64] = gear.map { $0 << 1 }

    /// The length of the chunk that starts at the beginning of `bytes`: a boundary found by
    /// the gear hash, or `maximumSize`, or all of `bytes` when they are no longer than the
    /// minimum. Give it at least `maximumSize` bytes unless they are the stream's last.
    public func cutPoint(_ bytes: UnsafeRawBufferPointer) -> Int {
        var remaining = bytes.count
        if remaining <= minimumSize { return remaining }
        var center = averageSize
        if remaining > maximumSize {
            remaining = maximumSize
        } else if remaining < center {
            center = remaining
        }
        let maskSmall = maskSmall, maskLarge = maskLarge
        let maskSmallShifted = maskSmall << 1, maskLargeShifted = maskLarge << 1
        return Self.gear.withUnsafeBufferPointer { gear in
            Self.gearShifted.withUnsafeBufferPointer { gearShifted in
                let source = bytes.bindMemory(to: UInt8.self)
                var hash: UInt64 = 0
                var index = minimumSize / 2
                while index < center / 2 {
                    let a = index * 2
                    hash = (hash << 2) &+ gearShifted[Int(source[a])]
                    if hash & maskSmallShifted == 0 { return a }
                    hash = hash &+ gear[Int(source[a + 1])]
                    if hash & maskSmall == 0 { return a + 1 }
                    index += 1
                }
                while index < remaining / 2 {
                    let a = index * 2
                    hash = (hash << 2) &+ gearShifted[Int(source[a])]
                    if hash & maskLargeShifted == 0 { return a }
                    hash = hash &+ gear[Int(source[a + 1])]
                    if hash & maskLarge == 0 { return a + 1 }
                    index += 1
                }
                return remaining
            }
        }
    }

    /// The chunk lengths of `data`, in order: for tests and small values.
    public func chunkLengths(of data: Data) -> [Int] {
        data.withUnsafeBytes { buffer in
            var lengths: [Int] = []
            var offset = 0
            while offset < buffer.count {
                let length = cutPoint(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
                lengths.append(length)
                offset += length
            }
            return lengths
        }
    }

    private enum CodingKeys: String, CodingKey {
        case minimumSize, averageSize, maximumSize, normalization
    }

    /// Decoded through the checking initializer: a manifest cannot name impossible sizes.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            averageSize: container.decode(Int.self, forKey: .averageSize), minimumSize: container.decode(Int.self, forKey: .minimumSize),
            maximumSize: container.decode(Int.self, forKey: .maximumSize), normalization: container.decode(Int.self, forKey: .normalization))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(minimumSize, forKey: .minimumSize)
        try container.encode(averageSize, forKey: .averageSize)
        try container.encode(maximumSize, forKey: .maximumSize)
        try container.encode(normalization, forKey: .normalization)
    }

    public static func == (lhs: FastCDC, rhs: FastCDC) -> Bool {
        (lhs.minimumSize, lhs.averageSize, lhs.maximumSize, lhs.normalization) == (rhs.minimumSize, rhs.averageSize, rhs.maximumSize, rhs.normalization)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(minimumSize)
        hasher.combine(averageSize)
        hasher.combine(maximumSize)
        hasher.combine(normalization)
    }
}

/// Cuts a stream into FastCDC chunks through one buffer of twice the maximum chunk size:
/// memory does not grow with the stream.
///
/// Not `Sendable`: one reader belongs to one task.
public final class FastCDCReader {
    private let chunker: FastCDC
    private let read: (UnsafeMutableRawBufferPointer) throws -> Int
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var finished = false
    /// Where the next chunk starts in the stream.
    public private(set) var offset: Int64 = 0

    /// Reads through `read`, which fills what it can of the buffer it is given and returns
    /// how much, 0 at the end.
    public init(chunker: FastCDC, read: @escaping (UnsafeMutableRawBufferPointer) throws -> Int) {
        self.chunker = chunker
        self.read = read
        buffer = [UInt8](repeating: 0, count: max(2 * chunker.maximumSize, 1 << 20))
    }

    /// Reads the file at `url` from its start.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError`` when the file cannot be opened.
    public convenience init(chunker: FastCDC, contentsOf url: URL) throws {
        self.init(chunker: chunker, file: try FileReader(url))
    }

    /// Reads the file from its start.
    package convenience init(chunker: FastCDC, file: FileReader) {
        var position: Int64 = 0
        self.init(chunker: chunker) { destination in
            let count = try file.read(into: destination, at: position)
            position += Int64(count)
            return count
        }
    }

    /// Reads `data`.
    public convenience init(chunker: FastCDC, data: Data) {
        var position = data.startIndex
        self.init(chunker: chunker) { destination in
            let count = min(destination.count, data.endIndex - position)
            data.copyBytes(to: destination.bindMemory(to: UInt8.self), from: position..<(position + count))
            position += count
            return count
        }
    }

    /// The next chunk, or nil after the last.
    public func next() throws -> Data? {
        if !finished && end - start < chunker.maximumSize { try refill() }
        guard end > start else { return nil }
        let length = buffer.withUnsafeBytes { chunker.cutPoint(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
        let chunk = Data(buffer[start..<(start + length)])
        start += length
        offset += Int64(length)
        return chunk
    }

    private func refill() throws {
        if start > 0 {
            buffer.withUnsafeMutableBytes { bytes in
                guard let base = bytes.baseAddress else { return }
                memmove(base, base + start, end - start)
            }
            end -= start
            start = 0
        }
        while end < buffer.count {
            let count = try buffer.withUnsafeMutableBytes { try read(UnsafeMutableRawBufferPointer(rebasing: $0[end...])) }
            if count == 0 {
                finished = true
                break
            }
            end += count
        }
    }
}
