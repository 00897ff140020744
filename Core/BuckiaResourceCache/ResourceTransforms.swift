import BuckiaCore
import Foundation

/// How a resource's bytes are kept on disk: the seed's compression provider, over `Data`.
///
/// The seed's default is a PNG encoding of a `UIImage`. A transform must give back the bytes it
/// was given, so transforms are lossless byte codings and the default keeps bytes as they came;
/// re-encoding an image (PNG, JPEG, HEIC, a thumbnail) is a ``ResourceProcessor``'s work, done
/// before the cache stores it (``ImageEncoding``; `ImageIOProcessor` on Apple platforms).
public protocol ResourceTransform: Sendable {
    /// Names the transform in each entry, so an entry is decoded by what encoded it.
    var name: String { get }
    /// The extension stored files get (empty: the path provider's name as it is).
    var fileExtension: String { get }
    /// The bytes to store for `data`.
    func encode(_ data: Data) throws -> Data
    /// The original bytes from what ``encode(_:)`` stored.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` for bytes this transform did not make.
    func decode(_ data: Data) throws -> Data
}

/// Stores the bytes as they came: the default.
public struct IdentityTransform: ResourceTransform {
    public init() {}
    public var name: String { "identity" }
    public var fileExtension: String { "" }
    public func encode(_ data: Data) throws -> Data { data }
    public func decode(_ data: Data) throws -> Data { data }
}

/// zlib (RFC 1950), for text, JSON and other compressible resources.
public struct ZlibTransform: ResourceTransform {
    /// 0–9, or -1 for zlib's default (6).
    public let level: Int32

    public init(level: Int32 = -1) {
        self.level = level
    }

    public var name: String { "zlib" }
    public var fileExtension: String { "z" }
    public func encode(_ data: Data) throws -> Data { try Zlib.compress(data, level: level) }
    public func decode(_ data: Data) throws -> Data { try Zlib.decompress(data, format: .zlib) }
}

/// The seed's size-adaptive compression, made honest about what it saves: resources of
/// `threshold` bytes or more are compressed, and kept compressed only when that saves at
/// least a tenth; each stored file starts with one byte saying which (0 as is, 1 zlib).
public struct AdaptiveTransform: ResourceTransform {
    public let threshold: Int
    let zlib: ZlibTransform

    public init(threshold: Int = 1 << 20, level: Int32 = -1) {
        self.threshold = threshold
        self.zlib = ZlibTransform(level: level)
    }

    public var name: String { "adaptive" }
    public var fileExtension: String { "" }

    public func encode(_ data: Data) throws -> Data {
        if data.count >= threshold {
            let compressed = try zlib.encode(data)
            if compressed.count <= data.count - data.count / 10 { return Data([1]) + compressed }
        }
        return Data([0]) + data
    }

    public func decode(_ data: Data) throws -> Data {
        switch data.first {
        case 0: return data.dropFirst()
        case 1: return try zlib.decode(Data(data.dropFirst()))
        default:
            throw BuckiaError(.corrupt, "A cached file does not start with the adaptive transform's marker; it is treated as missing.", operation: "read cache")
        }
    }
}
