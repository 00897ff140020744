import Buckia
import Foundation

extension CLI {
    static let chunkCommand = Command(
        name: "chunk", summary: "Store a file as content-defined chunks, restore it, or describe it.",
        usage: "chunk put FILE DEST | get SOURCE FILE | stat SOURCE  [--store PREFIX] [--average-size BYTES] [--compress] [--key-env NAME] [--adopt-store] [--json]",
        positionals: 2...3,
        options: [
            .value("store", "Where the chunks live: a prefix on the same remote (default .buckia-chunks/), or for a local DEST a folder (default .buckia-chunks beside it)."),
            .value("average-size", "put: the FastCDC average chunk size in bytes (default 65536; 256 to 4194304)."),
            .flag("compress", "put: compress chunks with zlib where that makes them smaller (the manifest records it for get)."),
            .value("key-env", "put: encrypt chunks (AES-256-GCM) with the 64 hex digits in this environment variable; get and stat of encrypted chunks need it."),
            .flag("json", "Print the statistics as one JSON object on the last line."),
            .flag("adopt-store", "put: the store's chunks were written with these options but its settings file was lost; check a sample of chunks reads back so, then record them."),
        ],
        details: """
            DEST and SOURCE name the manifest: REMOTE:PATH, or a local path. put writes only the chunks the store lacks and prints
            how many it wrote and reused; storing a changed file writes only what changed. get restores atomically, checking every
            chunk against its identifier. stat prints the manifest's size and chunks and how many of them the store lacks (exit 3
            when any are missing). Chunks are cut as FastCDC 2020 cuts them, so the same bytes make the same chunks wherever
            they are stored.
            """
    ) { invocation in
        let arguments = invocation.positionals
        switch arguments[0] {
        case "put":
            guard arguments.count == 3 else { throw UsageError(description: "chunk put needs FILE and DEST.") }
            let file = URL(fileURLWithPath: arguments[1])
            let destination = Location(arguments[2])
            if case .local(let manifest) = destination, LocalFile.isSameFile(file, manifest) {
                throw UsageError(description: "chunk put would replace \(file.path) with its own manifest; name another DEST.")
            }
            return try await chunkPut(invocation, file: file, destination: destination)
        case "get":
            guard arguments.count == 3 else { throw UsageError(description: "chunk get needs SOURCE and FILE.") }
            guard case .local(let file) = Location(arguments[2]) else {
                throw UsageError(
                    description: "chunk get restores into a local file, and \(arguments[2].debugDescription) names a remote; restore here, then cp it there (write ./\(arguments[2]) for a local file of that name).")
            }
            return try await chunkGet(invocation, source: Location(arguments[1]), file: file)
        case "stat":
            guard arguments.count == 2 else { throw UsageError(description: "chunk stat needs SOURCE only.") }
            return try await chunkStat(invocation, source: Location(arguments[1]))
        default:
            throw UsageError(description: "Unknown chunk action \(arguments[0].debugDescription); use put, get or stat.")
        }
    }

    /// Where a location's manifest is read from and written to, and its chunk store, undecorated.
    private struct ChunkTarget {
        let base: any ChunkStorageComposable
        let readManifest: @Sendable () async throws -> Data?
        let writeManifest: @Sendable (Data) async throws -> Void
    }

    private static func chunkTarget(_ invocation: Invocation, _ location: Location) throws -> ChunkTarget {
        switch location {
        case .remote(let name, let path):
            let (provider, _) = try invocation.provider(named: name)
            let key = try ObjectKey(path.trimmedSlashes)
            return ChunkTarget(
                base: try ProviderChunkStorage(provider: provider, prefix: invocation.arguments.value("store") ?? ".buckia-chunks/"),
                readManifest: {
                    do {
                        return try await provider.readData(remotePath: key, options: ReadOptions())
                    } catch let error as BuckiaError where error.code == .notFound {
                        return nil
                    }
                },
                writeManifest: { data in
                    _ = try await provider.uploadData(data, remotePath: key, options: UploadOptions(contentType: "application/json"))
                })
        case .local(let url):
            let folder = invocation.arguments.value("store").map { URL(fileURLWithPath: $0) }
                ?? url.deletingLastPathComponent().appendingPathComponent(".buckia-chunks", isDirectory: true)
            return ChunkTarget(
                base: ComposableFileSystemChunkStorage(baseURL: folder),
                readManifest: {
                    do {
                        let reader = try FileReader(url)
                        let size = try reader.size()
                        guard size <= Int64(ChunkManifest.maximumEncodedSize) else {
                            throw BuckiaError(.corrupt, "\(url.path) is \(size) bytes, more than any chunk manifest.", path: url.path)
                        }
                        return try reader.read(0..<size)
                    } catch let error as BuckiaError where error.code == .notFound {
                        return nil
                    }
                },
                writeManifest: { data in try AtomicFile.write(data, to: url) })
        }
    }

    /// The store with the decorators `transforms` names (outermost first), verified on reading.
    private static func decorate(_ base: any ChunkStorageComposable, transforms: [String], _ invocation: Invocation) throws -> any ChunkStorageComposable {
        var store = base
        for transform in transforms.reversed() {
            switch transform {
            case EncryptedRetrieval.transformName:
                guard let key = try chunkKey(invocation) else {
                    throw BuckiaError(.invalidConfiguration, "The chunks are encrypted: give --key-env NAME, the variable holding their key.")
                }
                store = try store.decorated { try EncryptedRetrieval(wrapped: $0, key: key) }
            case CompressedRetrieval.transformName:
                store = try store.decorated { try CompressedRetrieval(wrapped: $0) }
            default:
                throw BuckiaError(.unsupported, "The manifest's chunks were written through \(transform.debugDescription), which this buckia cannot read.")
            }
        }
        let organization = store.organization
        return store.decorated { VerifiedRetrieval(wrapped: $0, organization: organization) }
    }

    /// The key in the variable `--key-env` names, or nil without `--key-env`.
    private static func chunkKey(_ invocation: Invocation) throws -> [UInt8]? {
        guard let variable = invocation.arguments.value("key-env") else { return nil }
        guard let text = invocation.environment[variable], !text.isEmpty else {
            throw BuckiaError(.invalidConfiguration, "--key-env names \(variable), which is not set; set it to the key's 64 hex digits.")
        }
        return try EncryptedRetrieval.key(hex: text)
    }

    private static func manifest(_ target: ChunkTarget, _ location: Location) async throws -> ChunkManifest {
        guard let data = try await target.readManifest() else {
            throw BuckiaError(.notFound, "No chunk manifest at \(location).", operation: "chunk", path: "\(location)")
        }
        return try ChunkManifest.decode(data)
    }

    private static func chunkPut(_ invocation: Invocation, file: URL, destination: Location) async throws -> ExitCode {
        var chunker = FastCDC.standard
        if let text = invocation.arguments.value("average-size") {
            guard let size = Int(text) else { throw UsageError(description: "--average-size takes a number of bytes.") }
            chunker = try FastCDC(averageSize: size)
        }
        let target = try chunkTarget(invocation, destination)
        let transforms = (invocation.arguments.flag("compress") ? [CompressedRetrieval.transformName] : [])
            + (invocation.arguments.value("key-env") != nil ? [EncryptedRetrieval.transformName] : [])
        // The store keeps one way of writing chunks: a chunk reused from it must read back
        // through this manifest's transforms.
        let keyCheck = try chunkKey(invocation).map(EncryptedRetrieval.keyCheck(for:))
        let decorated = try decorate(target.base, transforms: transforms, invocation)
        try await ChunkStoreSettings(transforms: transforms, keyCheck: keyCheck)
            .establish(in: target.base, adoptingThrough: invocation.arguments.flag("adopt-store") ? decorated : nil)
        let files = ChunkedFileStore(storage: decorated, chunker: chunker)
        let stored = try await files.store(fileAt: file)
        var manifest = stored.manifest
        manifest.transforms = transforms
        try await target.writeManifest(try manifest.encoded())
        let statistics = stored.statistics
        if invocation.arguments.flag("json") {
            emitJSON([
                "manifest": "\(destination)", "bytes": statistics.bytes, "chunks": statistics.chunks, "chunksWritten": statistics.chunksWritten,
                "chunksReused": statistics.chunksReused, "newBytes": statistics.newBytes, "reusedBytes": statistics.reusedBytes,
            ])
        } else {
            Console.out("stored \(file.path.terminalSafe) as \("\(destination)".terminalSafe): \(statistics.chunks) chunks, \(statistics.bytes) bytes")
            Console.out("  chunks written \(statistics.chunksWritten) (\(statistics.newBytes) new bytes)")
            Console.out("  chunks reused  \(statistics.chunksReused) (\(statistics.reusedBytes) reused bytes)")
        }
        return .success
    }

    /// The manifest at `source` and a file store that reads its chunks the way they were written.
    private static func open(_ invocation: Invocation, _ source: Location) async throws -> (ChunkManifest, ChunkedFileStore) {
        let target = try chunkTarget(invocation, source)
        let manifest = try await manifest(target, source)
        let store = try decorate(target.base, transforms: manifest.transforms ?? [], invocation)
        return (manifest, ChunkedFileStore(storage: store))
    }

    private static func chunkGet(_ invocation: Invocation, source: Location, file: URL) async throws -> ExitCode {
        let (manifest, files) = try await open(invocation, source)
        try await files.restore(manifest, to: file)
        if invocation.arguments.flag("json") {
            emitJSON(["manifest": "\(source)", "bytes": manifest.size, "chunks": manifest.chunks.count, "file": file.path])
        } else {
            Console.out("restored \("\(source)".terminalSafe) to \(file.path.terminalSafe): \(manifest.size) bytes from \(manifest.chunks.count) chunks")
        }
        return .success
    }

    private static func chunkStat(_ invocation: Invocation, source: Location) async throws -> ExitCode {
        let (manifest, files) = try await open(invocation, source)
        let missing = try await files.missingChunks(manifest)
        let chunker = manifest.chunker
        if invocation.arguments.flag("json") {
            emitJSON([
                "manifest": "\(source)", "bytes": manifest.size, "chunks": manifest.chunks.count, "uniqueChunks": manifest.uniqueChunks.count,
                "missingChunks": missing.count, "chunker": chunker.algorithm, "averageSize": chunker.averageSize,
                "minimumSize": chunker.minimumSize, "maximumSize": chunker.maximumSize, "hashAlgorithm": manifest.hashAlgorithm.rawValue,
                "transforms": manifest.transforms ?? [],
            ])
        } else {
            Console.out("\("\(source)".terminalSafe): \(manifest.size) bytes in \(manifest.chunks.count) chunks (\(manifest.uniqueChunks.count) distinct)")
            Console.out("  cut by \(chunker.algorithm), average \(chunker.averageSize), minimum \(chunker.minimumSize), maximum \(chunker.maximumSize); \(manifest.hashAlgorithm) identifiers")
            if let transforms = manifest.transforms, !transforms.isEmpty { Console.out("  chunks stored through \(transforms.joined(separator: ", "))") }
            Console.out(missing.isEmpty ? "  every chunk is in the store" : "  \(missing.count) chunks are missing from the store")
        }
        return missing.isEmpty ? .success : .notFound
    }

    static func emitJSON(_ object: [String: Any]) {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        Console.out(String(decoding: data, as: UTF8.self))
    }
}
