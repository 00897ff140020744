import Foundation

/// Typed storage for `Codable` values over any ``StorageEngine`` (Bodega's `ObjectStorage`).
///
/// Values are encoded as JSON by default. A stored value that no longer decodes (the type
/// changed, the bytes were damaged) throws ``BuckiaError/Code/corrupt``; only a missing key
/// reads as nil.
///
/// ```swift
/// let animals = ObjectStorage<Animal>(engine: try await SQLiteStorageEngine(directory: .defaultStorageDirectory(appendingPath: "Animals").url))
/// try await animals.store(panda, forKey: CacheKey(verbatim: panda.id))
/// let all = try await animals.allObjects()
/// ```
public struct ObjectStorage<Object: Codable & Sendable>: Sendable {
    /// The engine the encoded values live in.
    public let engine: any StorageEngine
    private let encode: @Sendable (Object) throws -> Data
    private let decode: @Sendable (Data) throws -> Object

    /// Creates storage over `engine`, encoding with JSON.
    public init(engine: any StorageEngine) {
        self.init(engine: engine, encode: { try JSONEncoder().encode($0) }, decode: { try JSONValidation.decode(Object.self, from: $0, what: "The stored value") })
    }

    /// Creates storage over `engine` with your own encoding (property lists, a binary format).
    public init(
        engine: any StorageEngine, encode: @escaping @Sendable (Object) throws -> Data,
        decode: @escaping @Sendable (Data) throws -> Object
    ) {
        self.engine = engine
        self.encode = encode
        self.decode = decode
    }

    /// Stores `object` under `key`.
    public func store(_ object: Object, forKey key: CacheKey) async throws {
        try await engine.write(try encoded(object, key), key: key)
    }

    /// Stores many objects in one batch.
    public func store(_ objectsAndKeys: [(key: CacheKey, object: Object)]) async throws {
        try await engine.write(try objectsAndKeys.map { ($0.key, try encoded($0.object, $0.key)) })
    }

    /// The object under `key`, or nil.
    public func object(forKey key: CacheKey) async throws -> Object? {
        try await engine.read(key: key).map { try decoded($0, key) }
    }

    /// The objects that exist under `keys`, in the order of `keys`.
    public func objects(forKeys keys: [CacheKey]) async throws -> [Object] {
        try await objectsAndKeys(keys: keys).map(\.object)
    }

    /// The keys of `keys` that exist, with their objects.
    public func objectsAndKeys(keys: [CacheKey]) async throws -> [(key: CacheKey, object: Object)] {
        try await engine.readDataAndKeys(keys: keys).map { ($0.key, try decoded($0.data, $0.key)) }
    }

    /// Every object, in key order.
    public func allObjects() async throws -> [Object] {
        try await allObjectsAndKeys().map(\.object)
    }

    /// Every key and object, in key order.
    public func allObjectsAndKeys() async throws -> [(key: CacheKey, object: Object)] {
        try await engine.readAllDataAndKeys().map { ($0.key, try decoded($0.data, $0.key)) }
    }

    /// Removes the object under `key`.
    public func removeObject(forKey key: CacheKey) async throws { try await engine.remove(key: key) }

    /// Removes the objects under `keys`.
    public func removeObjects(forKeys keys: [CacheKey]) async throws { try await engine.remove(keys: keys) }

    /// Removes every object.
    public func removeAllObjects() async throws { try await engine.removeAllData() }

    /// How many objects are stored.
    public func keyCount() async throws -> Int { try await engine.keyCount() }

    /// Every key, in ascending order.
    public func allKeys() async throws -> [CacheKey] { try await engine.allKeys() }

    /// When the object under `key` was first stored.
    public func createdAt(forKey key: CacheKey) async throws -> Date? { try await engine.createdAt(key: key) }

    /// When the object under `key` was last stored.
    public func updatedAt(forKey key: CacheKey) async throws -> Date? { try await engine.updatedAt(key: key) }

    private func encoded(_ object: Object, _ key: CacheKey) throws -> Data {
        do {
            return try encode(object)
        } catch {
            throw BuckiaError(.invalidConfiguration, "The \(Object.self) value could not be encoded: \(error).", operation: "store", path: key.value)
        }
    }

    private func decoded(_ data: Data, _ key: CacheKey) throws -> Object {
        do {
            return try decode(data)
        } catch {
            throw BuckiaError(
                .corrupt, "The stored value is not a valid \(Object.self); it may come from an older version of the type.",
                operation: "read", path: key.value, cause: SendableErrorDescription(error))
        }
    }
}
