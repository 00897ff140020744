import Foundation

/// The key of a value in a ``StorageEngine``.
///
/// `CacheKey("https://example.com/a.jpg")` hashes its input (SHA-256, hex) so any string,
/// however long or odd, is a safe key; `CacheKey(verbatim:)` keeps the string as given, for
/// keys you want to read back from ``StorageEngine/allKeys()``.
public struct CacheKey: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    /// The stored key.
    public let value: String

    /// A key derived by hashing `string`.
    public init(_ string: String) { value = Hashing.sha256Hex(Data(string.utf8)) }

    /// A key derived by hashing a URL's absolute string.
    public init(url: URL) { self.init(url.absoluteString) }

    /// A key stored exactly as given.
    public init(verbatim value: String) { self.value = value }

    /// The longest key, in UTF-8 bytes, every engine accepts.
    public static let maximumUTF8Length = 4096

    /// Checks the key fits every engine: not empty, no NUL, at most ``maximumUTF8Length`` bytes.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` saying which rule the key breaks.
    public func validate() throws {
        let length = value.utf8.count
        if length == 0 { throw BuckiaError(.invalidPath, "A cache key cannot be empty.", operation: "validate key") }
        if length > CacheKey.maximumUTF8Length {
            throw BuckiaError(
                .invalidPath, "The cache key is \(length) bytes; the limit is \(CacheKey.maximumUTF8Length). Use CacheKey(_:) to hash a long key.",
                operation: "validate key", path: String(value.prefix(64)) + "…")
        }
        if value.utf8.contains(0) { throw BuckiaError(.invalidPath, "A cache key cannot contain NUL.", operation: "validate key") }
    }

    public var description: String { value }

    public static func < (lhs: CacheKey, rhs: CacheKey) -> Bool { lhs.value.utf8Precedes(rhs.value) }

    /// Keys are equal when their UTF-8 bytes are: NFC and NFD spellings are two keys, as they
    /// are to every engine's storage.
    public static func == (lhs: CacheKey, rhs: CacheKey) -> Bool { lhs.value.utf8Equals(rhs.value) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(value.utf8.count)
        for byte in value.utf8 { hasher.combine(byte) }
    }

    public init(from decoder: any Decoder) throws {
        value = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// A key-value store for `Data`, in Bodega's shape: the layer ObjectStorage persists through.
///
/// Unlike Bodega, a read that fails throws; only a missing key reads as nil.
///
/// ## Implementation requirements
///
/// - Be an actor: an engine is shared between tasks.
/// - Make each write atomic, and batch writes atomic where the backend allows.
/// - Keep `createdAt` when a key is overwritten and move `updatedAt`.
/// - Return ``allKeys()`` and the `readAll` variants in ascending key order.
/// - Declare every method you implement `async`, even when its body never suspends: in async
///   code Swift prefers an `async` overload, so a synchronous actor method loses to this
///   protocol's default (a one-by-one batch write, say) when called on the concrete type.
/// - Validate keys with ``CacheKey/validate()`` before any I/O; a batch validates all first.
/// - Run `BuckiaConformance`'s engine scenarios in your tests.
public protocol StorageEngine: Actor {
    /// What the engine supports (``EngineCapability/persistent`` for engines that survive reopening).
    nonisolated var capabilities: Set<EngineCapability> { get }

    /// Stores `data` under `key`, replacing any value there.
    func write(_ data: Data, key: CacheKey) async throws
    /// Stores many values, atomically where the backend allows.
    func write(_ dataAndKeys: [(key: CacheKey, data: Data)]) async throws

    /// The value for `key`, or nil if there is none.
    func read(key: CacheKey) async throws -> Data?
    /// The values that exist for `keys`, in the order of `keys`.
    func read(keys: [CacheKey]) async throws -> [Data]
    /// The keys of `keys` that exist, with their values.
    func readDataAndKeys(keys: [CacheKey]) async throws -> [(key: CacheKey, data: Data)]
    /// Every value, in key order.
    func readAllData() async throws -> [Data]
    /// Every key and value, in key order.
    func readAllDataAndKeys() async throws -> [(key: CacheKey, data: Data)]

    /// Removes the value for `key`; removing a missing key succeeds.
    func remove(key: CacheKey) async throws
    /// Removes many values.
    func remove(keys: [CacheKey]) async throws
    /// Removes every value.
    func removeAllData() async throws

    /// Whether a value exists for `key`.
    func keyExists(_ key: CacheKey) async throws -> Bool
    /// How many values are stored.
    func keyCount() async throws -> Int
    /// Every key, in ascending order.
    func allKeys() async throws -> [CacheKey]

    /// When the value for `key` was first written, or nil if there is none.
    func createdAt(key: CacheKey) async throws -> Date?
    /// When the value for `key` was last written, or nil if there is none.
    func updatedAt(key: CacheKey) async throws -> Date?
}

extension StorageEngine {
    public func write(_ dataAndKeys: [(key: CacheKey, data: Data)]) async throws {
        for (key, data) in dataAndKeys { try await write(data, key: key) }
    }

    public func read(keys: [CacheKey]) async throws -> [Data] {
        try await readDataAndKeys(keys: keys).map(\.data)
    }

    public func readDataAndKeys(keys: [CacheKey]) async throws -> [(key: CacheKey, data: Data)] {
        var result: [(key: CacheKey, data: Data)] = []
        for key in keys {
            if let data = try await read(key: key) { result.append((key, data)) }
        }
        return result
    }

    public func readAllData() async throws -> [Data] {
        try await readAllDataAndKeys().map(\.data)
    }

    public func remove(keys: [CacheKey]) async throws {
        for key in keys { try await remove(key: key) }
    }

    public func keyExists(_ key: CacheKey) async throws -> Bool {
        try await read(key: key) != nil
    }

    public func keyCount() async throws -> Int {
        try await allKeys().count
    }
}
