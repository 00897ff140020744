// Compiled only where ImageIO exists (Apple platforms): never on the machines that build and
// test Buckia (Docs/Platforms.md lists this file). The settings, their checks and their ids
// are in ImageEncoding.swift, tested everywhere.
#if canImport(ImageIO)
import BuckiaCore
import Foundation
import ImageIO

/// Re-encodes each downloaded image as its ``ImageEncoding`` says, through ImageIO, before the
/// cache stores it: the seed's PNG default, JPEG or HEIC with a quality, and thumbnails.
public struct ImageIOProcessor: ResourceProcessor {
    /// The settings applied.
    public let encoding: ImageEncoding

    /// A processor applying `encoding`.
    public init(_ encoding: ImageEncoding) {
        self.encoding = encoding
    }

    public var id: String { encoding.id }

    public func shouldProcess(_ location: ResourceLocation) -> Bool { true }

    /// The image in `data`, oriented upright, scaled down to ``ImageEncoding/maxPixelSize``,
    /// written in the encoding's format.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` for bytes ImageIO cannot decode;
    ///   `unsupported` where the device cannot write the format (HEIC without an encoder).
    public func process(_ data: Data, for location: ResourceLocation) throws -> Data {
        guard let source = CGImageSourceCreateWithData(data as CFData, [kCGImageSourceShouldCache: false] as CFDictionary),
            CGImageSourceGetCount(source) > 0
        else {
            throw BuckiaError(.corrupt, "The resource \(location) is not an image ImageIO can read (\(data.count) bytes).", operation: "process image")
        }
        // A "thumbnail" without a size limit is the whole image, with its EXIF orientation applied.
        var options: [CFString: Any] = [
            kCGImageSourceCreateThumbnailFromImageAlways: true, kCGImageSourceCreateThumbnailWithTransform: true,
            kCGImageSourceShouldCacheImmediately: true,
        ]
        if let maxPixelSize = encoding.maxPixelSize { options[kCGImageSourceThumbnailMaxPixelSize] = maxPixelSize }
        guard let image = CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary) else {
            throw BuckiaError(.corrupt, "ImageIO could not decode the image \(location).", operation: "process image")
        }
        let output = NSMutableData()
        guard let destination = CGImageDestinationCreateWithData(output as CFMutableData, encoding.format.uniformType as CFString, 1, nil) else {
            throw BuckiaError(.unsupported, "This device cannot write \(encoding.format.rawValue.uppercased()) images; choose PNG or JPEG.", operation: "process image")
        }
        let properties: [CFString: Any] = encoding.format.isLossy ? [kCGImageDestinationLossyCompressionQuality: encoding.quality] : [:]
        CGImageDestinationAddImage(destination, image, properties as CFDictionary)
        guard CGImageDestinationFinalize(destination) else {
            throw BuckiaError(.io, "ImageIO could not write the image \(location) as \(encoding.format.rawValue.uppercased()).", operation: "process image")
        }
        return output as Data
    }
}

extension ResourceCacheConfiguration {
    /// Seed 004's image cache: every resource re-encoded as `encoding` (PNG by default) before
    /// it is stored, the other choices the defaults.
    public static func images(_ encoding: ImageEncoding) -> ResourceCacheConfiguration {
        var configuration = ResourceCacheConfiguration()
        configuration.processor = ImageIOProcessor(encoding)
        return configuration
    }
}
#endif
