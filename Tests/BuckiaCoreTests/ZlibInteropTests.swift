import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// Runs Python 3 for the interoperability checks, when the machine has it.
enum Python {
    static let isAvailable = (try? run("import gzip, hashlib", arguments: [])) != nil

    /// Runs `script` with `arguments` and returns its standard output, trimmed.
    static func run(_ script: String, arguments: [String]) throws -> String {
        let run = try ToolRun.run("python3", ["-c", script] + arguments, limit: .seconds(60))
        guard run.status == 0 else { throw BuckiaError(.io, "python3 failed (\(run.status)): \(run.errors)") }
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Buckia's zlib and gzip streams against another implementation: Python's `gzip` and `zlib`.
struct ZlibInteropTests {
    /// Made by Python 3.11: `gzip.compress(text, compresslevel=9, mtime=0)` and
    /// `zlib.compress(text, 9)`, where `text` is ``fixtureText`` in UTF-8.
    static let pythonGzip =
        "H4sIAAAAAAACA+3MyRWCMBQF0FZeBRbgkhpsADFgRAlGosgKZ9txnrWD91vSLtxkfc+5gYtSHSKpdA6dFcqaHLEuC2dVE62uwtDpKEXbmkmG2JTouUE+ghkri+LH/bCaomOSBgI/+clPfvLTHybuuOeBR5545oVX3njng0+++OZHapnJXBaylJWsZSPbL18xajD4BQAA"
    static let pythonZlib =
        "eNrtzMkVgjAUBdBWXgUW4JIabAAxYEQJRqLICmfbcZ61g/db0i7cZH3PuYGLUh0iqXQOnRXKmhyxLgtnVROtrsLQ6ShF25pJhtiU6LlBPoIZK4vix/2wmqJjkgYCP/nJT37y0x8m7rjngUeeeOaFV95454NPvvjmR2qZyVwWspSVrGUj2y8lDT3M"
    static let fixtureText =
        String(repeating: "Buckia gzip interop fixture: The quick brown fox jumps over the lazy dog. ", count: 20)
        + String(String.UnicodeScalarView((0x3b1..<0x3c9).compactMap(Unicode.Scalar.init)))

    @Test("Python's gzip reads what Buckia writes", .enabled(if: Python.isAvailable))
    func gzipReadableByPython() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let data = Payload.all[3].data
        let url = directory.file("payload.gz")
        try Zlib.compress(data, format: .gzip).write(to: url)
        let digest = try Python.run(
            "import gzip, hashlib, sys; print(hashlib.sha256(gzip.open(sys.argv[1]).read()).hexdigest())",
            arguments: [url.path])
        #expect(digest == Hashing.sha256Hex(data))
    }

    @Test("Buckia reads what Python's gzip writes", .enabled(if: Python.isAvailable))
    func gzipWrittenByPython() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let url = directory.file("python.gz")
        let digest = try Python.run(
            """
            import gzip, hashlib, random, sys
            data = bytes(random.Random(7).getrandbits(8) for _ in range(300000)) + b'tail' * 1000
            open(sys.argv[1], 'wb').write(gzip.compress(data))
            print(hashlib.sha256(data).hexdigest())
            """, arguments: [url.path])
        let output = try Zlib.decompress(Data(contentsOf: url), format: .gzip)
        #expect(Hashing.sha256Hex(output) == digest)
    }

    @Test("Fixtures made by Python decompress, with and without a declared format")
    func pythonFixtures() throws {
        let gzip = try #require(Data(base64Encoded: Self.pythonGzip))
        let zlib = try #require(Data(base64Encoded: Self.pythonZlib))
        let expected = Data(Self.fixtureText.utf8)
        #expect(Hashing.sha256Hex(expected) == "f973ec2593b81c43334428d0a3efb15991f311faeb5d3025372015d0979a0404")
        #expect(try Zlib.decompress(gzip, format: .gzip) == expected)
        #expect(try Zlib.decompress(gzip) == expected)
        #expect(try Zlib.decompress(zlib, format: .zlib) == expected)
        #expect(try Zlib.decompress(zlib) == expected)
    }
}
