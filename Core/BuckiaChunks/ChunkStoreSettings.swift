import BuckiaCore
import Foundation

/// How a chunk store's chunks are written — the transforms and the key — recorded once in the
/// store, so that every writer uses the same.
///
/// Deduplication reuses a chunk by its identifier alone. A chunk written plain and one written
/// compressed and encrypted have the same identifier, so a store that mixed them would hand a
/// reader bytes its stack cannot decode. Tools that open a store with a stack of their own
/// (`buckia chunk`, the `chunk` engine) record it in ``path`` when the store is new and refuse
/// a different one after that.
public struct ChunkStoreSettings: Codable, Hashable, Sendable {
    /// The object or file, at the store's root, that holds the settings.
    public static let path = "buckia-chunk-store.json"
    private static let formatName = "buckia-chunk-store"

    /// Always `buckia-chunk-store`.
    public var format: String
    /// The format version, 1.
    public var version: Int
    /// The transforms chunks are written through, outermost first (`zlib`, `aes-256-gcm`).
    public var transforms: [String]
    /// The encryption key's check value (``EncryptedRetrieval/keyCheck(for:)``); nil when chunks are not encrypted.
    public var keyCheck: String?

    /// Settings for chunks written through `transforms`, under the key whose check is `keyCheck`.
    public init(transforms: [String], keyCheck: String? = nil) {
        format = Self.formatName
        version = 1
        self.transforms = transforms
        self.keyCheck = keyCheck
    }

    /// How many of a store's chunks ``establish(in:adoptingThrough:)`` reads back before it
    /// adopts a store whose settings were lost.
    public static let adoptionSample = 8

    /// Records these settings in a store, or checks them against the ones it has, refusing a
    /// store that holds chunks but no settings (its settings file was lost): deduplication
    /// would reuse those chunks by identifier whatever transforms they were written through,
    /// and a manifest that cannot be restored would follow.
    ///
    /// - Parameters:
    ///   - store: The store, undecorated.
    ///   - reader: The same store decorated with these settings' transforms and verified,
    ///     when the user says the chunks were written this way: a sample of them
    ///     (``adoptionSample``) must read back through it, and then the settings are recorded.
    ///     Nil refuses such a store.
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a store with chunks and no
    ///   settings (without `reader`, or when a sampled chunk does not read back through it);
    ///   what ``establish(in:)`` throws.
    public func establish(in store: any ChunkStorageComposable, adoptingThrough reader: (any ChunkStorageComposable)? = nil) async throws {
        if try await store.retrieval.readChunk(at: Self.path) == nil, let enumeration = store.enumeration {
            let held = try await enumeration.allChunks()
            if !held.isEmpty {
                guard let reader else {
                    throw BuckiaError(
                        .invalidConfiguration,
                        "The chunk store holds \(held.count) chunks but no record of how they were written (\(Self.path) is missing), so its chunks cannot be reused safely. If you know how they were written, give the same options (--compress, --key-env) and --adopt-store: a sample of chunks is read back that way before it is recorded. Otherwise use another --store.",
                        operation: "open chunk store", path: Self.path)
                }
                var verified = 0
                for identifier in held.sorted().prefix(Self.adoptionSample) {
                    do {
                        // Gone since the listing (a concurrent collection): another is tried.
                        guard try await reader.readChunk(identifier) != nil else { continue }
                        verified += 1
                    } catch {
                        let wrapped = BuckiaError.wrapping(error)
                        throw BuckiaError(
                            .invalidConfiguration,
                            "The chunk store's chunk \(identifier.id) does not read back through \(transforms.isEmpty ? "no transform" : transforms.joined(separator: " + ")) (\(wrapped.message)); the chunks were written another way. Adopt the store with the options they were written with.",
                            operation: "open chunk store", path: Self.path)
                    }
                }
                guard verified > 0 else {
                    throw BuckiaError(
                        .invalidConfiguration, "None of the chunks sampled from the store could be read back to check the options; nothing was recorded.",
                        operation: "open chunk store", path: Self.path)
                }
            }
        }
        try await establish(in: store.retrieval)
    }

    /// Records these settings in a store that has none, or checks them against the ones it has.
    ///
    /// - Parameter retrieval: The store's undecorated retrieval.
    /// - Throws: ``BuckiaError/Code/unauthorized`` when the store's chunks are encrypted under
    ///   another key; ``BuckiaError/Code/invalidConfiguration`` when they are written through
    ///   other transforms; ``BuckiaError/Code/corrupt`` when the recorded settings cannot be read.
    public func establish(in retrieval: any ChunkStorageRetrieval) async throws {
        guard let data = try await retrieval.readChunk(at: Self.path) else {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try await retrieval.writeChunk(try encoder.encode(self), at: Self.path, metadata: nil)
            return
        }
        let recorded: ChunkStoreSettings
        do {
            recorded = try JSONValidation.decode(ChunkStoreSettings.self, from: data, what: "The chunk store's settings")
        } catch {
            throw BuckiaError(
                .corrupt, "The chunk store's settings (\(Self.path)) cannot be read (\(BuckiaError.wrapping(error).message)); the store is damaged or is not a Buckia chunk store.",
                operation: "open chunk store", path: Self.path)
        }
        guard recorded.format == Self.formatName, recorded.version == 1 else {
            throw BuckiaError(.corrupt, "The chunk store's settings (\(Self.path)) are not version 1 Buckia settings.", operation: "open chunk store", path: Self.path)
        }
        func describe(_ transforms: [String]) -> String { transforms.isEmpty ? "no transform" : transforms.joined(separator: " + ") }
        guard recorded.transforms == transforms else {
            throw BuckiaError(
                .invalidConfiguration,
                "The chunk store holds chunks written through \(describe(recorded.transforms)), and these would be written through \(describe(transforms)); use the store's options, or another store.",
                operation: "open chunk store", path: Self.path)
        }
        guard recorded.keyCheck == keyCheck else {
            throw BuckiaError(.unauthorized, "The chunk store's chunks are encrypted with a different key; use the key the store was made with.", operation: "open chunk store", path: Self.path)
        }
    }
}
