import BuckiaChunks
import BuckiaCore
import BuckiaDatabase
import BuckiaGateway
import BuckiaSecurity
import BuckiaSigV4
import Foundation

/// A parser of outside input, driven by a fuzzer: given any bytes, it must return (an error
/// is a fine answer) and never trap, hang or touch memory it does not own. Where a parser has a
/// law (what it decodes encodes back to the same value), a broken law is thrown as a
/// ``FuzzFinding``: `buckia-fuzz` under libFuzzer aborts on it, so the fuzzer keeps the input as
/// it keeps a crash, and the replays fail on it without ending the test process.
///
/// `Tools/fuzz/fuzz` runs each under libFuzzer with AddressSanitizer; `FuzzTests` replays every
/// input kept under `Tests/Fuzz/<target>/` on each test run, so a crash once found stays fixed.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// S3's XML answers (`XMLNode.parse`): listings, errors, multipart replies; and the error
    /// each makes as a failed request's body (`S3Provider.error`), whose message must hold no
    /// control character.
    case s3XML = "s3-xml"
    /// Strict RFC 8259 JSON with a depth bound (`JSONValidation`), which every JSON document
    /// from outside passes first: B2 and Bunny answers, manifests, configurations.
    case json
    /// Glob patterns (`GlobPattern`), first line the pattern, each further line a path to match.
    case glob
    /// A remote's JSON configuration (`BuckiaConfiguration.decode`), then the provider's
    /// settings resolved from it and an environment; no secret in what either prints
    /// (``ConfigurationTarget``).
    case configuration
    /// KSUIDs as text, which name diff files between users.
    case ksuid
    /// User tokens (JWT, compact form) against a verifier holding the fuzz key, and
    /// `UserTokenVerifier.inspect`.
    case jwt
    /// JSON Web Keys (`UserTokenVerificationKey(jwk:)`).
    case jwk
    /// Chunk manifests (`ChunkManifest.decode`); what decodes must encode and decode back equal.
    case chunkManifest = "chunk-manifest"
    /// A SigV4 request's authorization (`SigV4Verifier.parse`, then `verify`): first line the
    /// method, second the target, each further line a header `name: value`. Laws in
    /// ``SigV4Target``: nothing unsigned verifies, everything the client signs does.
    case sigV4 = "sigv4"
    /// What a client sends `buckia serve s3` (`HTTPServer.parse`): request heads, then bodies
    /// by `Content-Length` or chunked, pipelined until the bytes end or one is refused.
    case httpRequest = "http-request"
    /// Diff files between users (`DiffSummary(contentsOf:)`): an SQLite database, checked
    /// before anything reads its rows.
    case diffFile = "diff-file"
    /// Chunk packs (`ChunkPack.check`, the reading an import does before it stores a chunk):
    /// what is accepted was read to its last byte.
    case chunkPack = "chunk-pack"
    /// B2's answers past the JSON (`B2Provider.listingPage`, `describedFile`,
    /// `readAuthorization`, `error`): first line `list [START]`, `file`, `authorize` or
    /// `error STATUS`, then the body. Laws in ``ProviderAnswers``.
    case b2Answer = "b2-answer"
    /// Bunny's answers past the JSON (`BunnyProvider.folderItems`, `described`, `error`): first
    /// line `list [FOLDER]`, `describe` or `error STATUS`, then the body.
    case bunnyAnswer = "bunny-answer"

    /// Runs one input through the parser: nil when the input was accepted, else what refused
    /// it (for `buckia-fuzz --verbose` and for checking that seeds reach the accepting paths).
    ///
    /// - Throws: ``FuzzFinding`` when the input breaks a law of the parser; what setting up a
    ///   target failed with (the `diff-file` target's folder, the `jwt` target's verifier).
    @discardableResult
    public func run(_ data: Data) throws -> String? {
        func refusal(_ body: () throws -> Void) -> String? {
            do {
                try body()
                return nil
            } catch {
                return "\(error)"
            }
        }
        switch self {
        case .s3XML:
            try ProviderAnswers.s3Error(data)
            return refusal { _ = try XMLNode.parse(data, what: "fuzz input") }
        case .b2Answer:
            return try ProviderAnswers.b2(data)
        case .bunnyAnswer:
            return try ProviderAnswers.bunny(data)
        case .json:
            return refusal { try JSONValidation.validate(data) }
        case .glob:
            let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            guard let first = lines.first else { return "no pattern" }
            return refusal {
                let pattern = try GlobPattern(String(first))
                for path in lines.dropFirst().prefix(64) { _ = pattern.matches(String(path)) }
            }
        case .configuration:
            return try ConfigurationTarget.run(data)
        case .ksuid:
            guard let ksuid = KSUID(String(decoding: data, as: UTF8.self)) else { return "not a KSUID" }
            // A KSUID read from text writes back as text that reads as itself.
            guard KSUID(ksuid.description) == ksuid else { throw FuzzFinding("KSUID \(ksuid) does not read back as itself") }
            return nil
        case .jwt:
            let token = String(decoding: data, as: UTF8.self)
            let inspected = refusal { _ = try UserTokenVerifier.inspect(token) }
            let verifier = try Self.verifier.get()
            return refusal { _ = try verifier.verify(token) }.map { "\($0) (inspect: \(inspected ?? "read"))" }
        case .jwk:
            return refusal { _ = try UserTokenVerificationKey(jwk: String(decoding: data, as: UTF8.self)) }
        case .chunkManifest:
            let manifest: ChunkManifest
            do {
                manifest = try ChunkManifest.decode(data)
            } catch {
                return "\(error)"
            }
            // What decodes encodes, and that decodes back to the same manifest.
            guard let encoded = try? manifest.encoded(), let again = try? ChunkManifest.decode(encoded), again == manifest else {
                throw FuzzFinding("a decoded chunk manifest does not survive encoding and decoding again")
            }
            return nil
        case .sigV4:
            return try SigV4Target.run(data)
        case .httpRequest:
            let outcomes = HTTPServer.parse([UInt8](data))
            // Only the last request read may be refused: a refusal ends the connection.
            guard !outcomes.dropLast().contains(where: { if case .refused = $0 { true } else { false } }) else {
                throw FuzzFinding("a request was read after a refused one")
            }
            if case .refused(_, let reason)? = outcomes.last { return reason }
            return nil
        case .diffFile:
            let url = try Self.diffFolder.get().appendingPathComponent("input.sqlite")
            defer { _ = unlink(url.path) }
            do {
                try data.write(to: url)
                _ = try DiffSummary(contentsOf: url, now: Self.diffClock)
                return nil
            } catch let error as BuckiaError {
                // The file's name must be the change it holds, which a fuzzer cannot know: named
                // so and read again, the checks past the name (row shapes, the hash) are reached.
                guard case .nameMismatch(_, let ksuid)? = error.cause as? DiffProblem, KSUID(ksuid) != nil else { return "\(error)" }
                let named = url.deletingLastPathComponent().appendingPathComponent("\(ksuid).sqlite")
                defer { _ = unlink(named.path) }
                return refusal {
                    try data.write(to: named)
                    _ = try DiffSummary(contentsOf: named, now: Self.diffClock)
                }
            } catch {
                return "\(error)"
            }
        case .chunkPack:
            let url = try Self.diffFolder.get().appendingPathComponent("input.pack")
            defer { _ = unlink(url.path) }
            let summary: ChunkPackSummary
            do {
                try data.write(to: url)
                summary = try ChunkPack.check(url)
            } catch {
                return "\(error)"
            }
            guard summary.packBytes == Int64(data.count) else {
                throw FuzzFinding("a pack of \(data.count) bytes was accepted after reading \(summary.packBytes)")
            }
            return nil
        }
    }

    /// A folder of this process's own for the `diff-file` and `chunk-pack` targets' files,
    /// made on first use.
    static let diffFolder = Result { () throws -> URL in
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-fuzz-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        diffFolderPath = folder.path
        // Each input's file goes as soon as it is read; the folder goes with the process.
        atexit { _ = diffFolderPath.map { rmdir($0) } }
        return folder
    }

    /// The time diff files are read at: fixed, so a seed's verdict does not change with the day.
    static let diffClock = Date(timeIntervalSince1970: 1_795_000_000)

    /// The verifier the `jwt` target checks tokens with: an HS256 key whose secret is fixed, so
    /// tokens the seed corpus holds stay valid for as long as their expiry says.
    static let verifier = Result { try UserTokenVerifier(keys: [fuzzSigningKey.get().verificationKey()]) }

    /// The fixed HS256 key of the `jwt` target (32 bytes 0x2A), for seeding its corpus.
    public static let fuzzSigningKey = Result {
        try UserTokenSigningKey(keyId: "fuzz", algorithm: .hs256, encoded: Secret(Base64URL.encode(Data(repeating: 0x2A, count: 32))))
    }
}

/// An input that breaks a law of its parser (a KSUID that does not read back as itself, a
/// manifest that does not survive encoding, a request read after a refused one): a bug the
/// fuzzer found, as a crash is.
public struct FuzzFinding: Error, CustomStringConvertible {
    /// Which law broke, and on what.
    public var description: String

    init(_ description: String) { self.description = description }
}

/// The `diff-file` target's folder, for removing it at exit.
nonisolated(unsafe) private var diffFolderPath: String?
