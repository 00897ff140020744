import BuckiaChunks
import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// One chunker configuration checked against the reference.
struct ChunkerCase: Sendable, CustomTestStringConvertible {
    let average: Int
    let minimum: Int?
    let maximum: Int?
    let normalization: Int

    var testDescription: String { "avg \(average) min \(minimum.map(String.init) ?? "default") max \(maximum.map(String.init) ?? "default") nc \(normalization)" }

    func chunker() throws -> FastCDC { try FastCDC(averageSize: average, minimumSize: minimum, maximumSize: maximum, normalization: normalization) }

    static let all: [ChunkerCase] = [
        ChunkerCase(average: 65_536, minimum: nil, maximum: nil, normalization: 1),
        ChunkerCase(average: 16_384, minimum: nil, maximum: nil, normalization: 1),
        ChunkerCase(average: 8192, minimum: 2048, maximum: 65_536, normalization: 2),
        ChunkerCase(average: 4096, minimum: 64, maximum: 16_384, normalization: 0),
        ChunkerCase(average: 1024, minimum: 256, maximum: 4096, normalization: 3),
        ChunkerCase(average: 1_000_000, minimum: nil, maximum: nil, normalization: 1),
    ]
}

/// Bytes with the shapes chunkers meet: noise, repeated text, a run of zeros (where only the
/// maximum size cuts), and noise again.
func sampleContent(seed: UInt64 = 42) -> Data {
    var generator = SplitMix64(seed: seed)
    var data = Data((0..<2_000_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
    data.append(Data(String(repeating: "All work and no play makes Jack a dull boy. ", count: 12_000).utf8))
    data.append(Data(count: 700_000))
    data.append(Data((0..<1_300_001).map { _ in UInt8.random(in: 0...255, using: &generator) }))
    return data
}

@Suite("FastCDC")
struct FastCDCTests {
    static let content = sampleContent()

    /// pyfastcdc's pure-Python chunker (the reference) cutting `file` with `configuration`.
    static func referenceLengths(_ file: URL, _ configuration: ChunkerCase) throws -> [Int] {
        let script = """
            import sys
            from pyfastcdc.py import FastCDC
            avg, mn, mx, nc = (int(a) if a != '-' else None for a in sys.argv[2:6])
            chunker = FastCDC(avg, min_size=mn, max_size=mx, normalized_chunking=nc)
            data = open(sys.argv[1], 'rb').read()
            print(','.join(str(c.length) for c in chunker.cut_buf(data)))
            """
        let arguments = [
            "-c", script, file.path, String(configuration.average), configuration.minimum.map(String.init) ?? "-",
            configuration.maximum.map(String.init) ?? "-", String(configuration.normalization),
        ]
        let result = try ToolRun.run("python3", arguments, limit: .seconds(300))
        guard result.status == 0 else {
            throw BuckiaError(.io, "pyfastcdc did not run (Tools/test installs it with pip): \(result.errors)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
    }

    @Test("cuts where pyfastcdc (FastCDC 2020) cuts", arguments: ChunkerCase.all)
    func agreesWithReference(_ configuration: ChunkerCase) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-fastcdc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Self.content.write(to: file)
        let expected = try Self.referenceLengths(file, configuration)
        let actual = try configuration.chunker().chunkLengths(of: Self.content)
        #expect(expected.reduce(0, +) == Self.content.count, "the reference's lengths do not cover the content")
        #expect(expected.count >= 3, "the reference cut too few chunks to compare: \(expected.count)")
        #expect(actual == expected, "first difference at chunk \(zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(actual.count, expected.count))")
    }

    @Test("the streaming reader cuts as the whole buffer does, whatever the read sizes", arguments: ChunkerCase.all.prefix(4))
    func streamingMatchesBuffer(_ configuration: ChunkerCase) throws {
        let chunker = try configuration.chunker()
        let content = Self.content
        var generator = SplitMix64(seed: 7)
        var position = 0
        // Reads of 1 byte to 200 kB at a time, as pipes and sockets deliver.
        let reader = FastCDCReader(chunker: chunker) { buffer in
            let count = min(buffer.count, content.count - position, Int.random(in: 1...200_000, using: &generator))
            content.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: position..<(position + count))
            position += count
            return count
        }
        var lengths: [Int] = []
        var joined = Data()
        while let chunk = try reader.next() {
            lengths.append(chunk.count)
            joined.append(chunk)
        }
        #expect(lengths == chunker.chunkLengths(of: content))
        #expect(joined == content)
    }

    @Test("an edit moves only the boundaries near it")
    func editIsLocal() throws {
        let chunker = try FastCDC(averageSize: 8192)
        var edited = Self.content
        edited.insert(contentsOf: Data("an insertion".utf8), at: 1_000_000)
        let before = try Set(FastCDCReader.identifiers(Self.content, chunker))
        let after = try FastCDCReader.identifiers(edited, chunker)
        let new = after.filter { !before.contains($0) }
        #expect(new.count >= 1 && new.count <= 3, "\(new.count) of \(after.count) chunks changed for one insertion")
    }

    /// The chunk-store scenario "files as chunks write only what changed" counts a chunk as the
    /// original's only when it ends before an edit: a cut at n is decided with byte n hashed
    /// (the reference's two-byte step), so a chunk ending exactly at an edit may be cut anew.
    /// CI once met that case (a 5,115-byte chunk ending at the edited offset 150000).
    @Test("a cut at n depends on the bytes up to n and on none after it")
    func cutDependsOnTheByteAtIt() throws {
        let chunker = try FastCDC(averageSize: 4096, minimumSize: 1024, maximumSize: 16_384)
        var movedByByteAtCut = 0
        for seed in UInt64(1)...32 {
            var generator = SplitMix64(seed: seed)
            let data = Data((0..<20_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let cut = data.withUnsafeBytes { chunker.cutPoint($0) }
            try #require(cut > 1024 && cut < 16_384, "seed \(seed): the cut \(cut) is not a content-defined one")
            for later in [cut + 1, cut + 2, cut + 100, data.count - 1] {
                var changed = data
                changed[later] ^= 0x5A
                #expect(changed.withUnsafeBytes { chunker.cutPoint($0) } == cut, "seed \(seed): changing byte \(later) moved the cut at \(cut)")
            }
            var atCut = data
            atCut[cut] ^= 0x5A
            if atCut.withUnsafeBytes({ chunker.cutPoint($0) }) != cut { movedByByteAtCut += 1 }
        }
        #expect(movedByByteAtCut > 0, "no cut of 32 moved when the byte at it changed")
    }

    struct InvalidCase: Sendable, CustomTestStringConvertible {
        let average: Int, minimum: Int?, maximum: Int?, normalization: Int
        var testDescription: String { "\(average)/\(minimum.map(String.init) ?? "-")/\(maximum.map(String.init) ?? "-")/\(normalization)" }
    }

    @Test("refuses sizes outside the published bounds", arguments: [
        InvalidCase(average: 255, minimum: nil, maximum: nil, normalization: 1),
        InvalidCase(average: 4_194_305, minimum: nil, maximum: nil, normalization: 1),
        InvalidCase(average: 65_536, minimum: 63, maximum: nil, normalization: 1),
        InvalidCase(average: 65_536, minimum: nil, maximum: 16_777_217, normalization: 1),
        InvalidCase(average: 65_536, minimum: 70_000, maximum: nil, normalization: 1),
        InvalidCase(average: 65_536, minimum: nil, maximum: 60_000, normalization: 1),
        InvalidCase(average: 65_536, minimum: nil, maximum: nil, normalization: 4),
        InvalidCase(average: 65_536, minimum: nil, maximum: nil, normalization: -1),
        InvalidCase(average: Int.max, minimum: nil, maximum: nil, normalization: 1),
    ])
    func refusesBadSizes(_ bad: InvalidCase) {
        #expect(throws: BuckiaError.self) {
            try FastCDC(averageSize: bad.average, minimumSize: bad.minimum, maximumSize: bad.maximum, normalization: bad.normalization)
        }
    }

    @Test("the default is 64 KiB average, 16 KiB minimum, 256 KiB maximum")
    func defaults() throws {
        #expect(try FastCDC() == FastCDC.standard)
        #expect(FastCDC.standard.averageSize == 65_536 && FastCDC.standard.minimumSize == 16_384 && FastCDC.standard.maximumSize == 262_144)
    }
}

extension FastCDCReader {
    static func identifiers(_ data: Data, _ chunker: FastCDC) throws -> [ChunkIdentifier] {
        let reader = FastCDCReader(chunker: chunker, data: data)
        var result: [ChunkIdentifier] = []
        while let chunk = try reader.next() { result.append(try ChunkIdentifier.of(chunk)) }
        return result
    }
}
