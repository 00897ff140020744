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
            recorded = try JSONDecoder().decode(ChunkStoreSettings.self, from: data)
        } catch {
            throw BuckiaError(.corrupt, "The chunk store's settings (\(Self.path)) cannot be read; the store is damaged or is not a Buckia chunk store.", operation: "open chunk store", path: Self.path)
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
