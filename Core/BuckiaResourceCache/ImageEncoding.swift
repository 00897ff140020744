import BuckiaCore
import Foundation

/// How an image resource is re-encoded before the cache stores it (seed 004's compression
/// providers): PNG by default (lossless), JPEG or HEIC with a quality, and optionally scaled
/// down so its longer side is at most ``maxPixelSize`` (a thumbnail).
///
/// These are the settings; `ImageIOProcessor`, the ``ResourceProcessor`` that applies them,
/// exists where Apple's ImageIO does (Docs/Platforms.md). Each setting is part of ``id``, so
/// changing one caches anew rather than serving what the old settings made.
public struct ImageEncoding: Sendable, Hashable {
    /// The stored format.
    public enum Format: String, Sendable, CaseIterable {
        /// Lossless; ``ImageEncoding/quality`` is ignored.
        case png
        /// Lossy, smaller.
        case jpeg
        /// Lossy, smallest; written by devices with an HEVC encoder.
        case heic

        /// The Uniform Type Identifier ImageIO writes it by.
        public var uniformType: String {
            switch self {
            case .png: "public.png"
            case .jpeg: "public.jpeg"
            case .heic: "public.heic"
            }
        }

        /// The file extension of a stored image.
        public var fileExtension: String { rawValue }

        /// Whether ``ImageEncoding/quality`` applies.
        public var isLossy: Bool { self != .png }
    }

    /// The stored format.
    public let format: Format
    /// 0 (smallest) to 1 (best), for lossy formats.
    public let quality: Double
    /// The longest side in pixels of the stored image, or nil to keep the image's size.
    public let maxPixelSize: Int?

    /// The largest accepted ``maxPixelSize``: beyond any image a screen shows.
    public static let maximumPixelSize = 1 << 15

    /// Checks and keeps the settings.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for a quality outside
    ///   0…1 (or not a number) and a pixel size outside 1…``maximumPixelSize``.
    public init(format: Format = .png, quality: Double = 0.8, maxPixelSize: Int? = nil) throws {
        guard quality.isFinite, (0...1).contains(quality) else {
            throw BuckiaError(.invalidConfiguration, "An image quality is from 0 (smallest) to 1 (best); \(quality) is not.", operation: "configure image encoding")
        }
        if let maxPixelSize, !(1...Self.maximumPixelSize).contains(maxPixelSize) {
            throw BuckiaError(
                .invalidConfiguration, "An image's longest side is from 1 to \(Self.maximumPixelSize) pixels; \(maxPixelSize) is not.",
                operation: "configure image encoding")
        }
        self.format = format
        self.quality = quality
        self.maxPixelSize = maxPixelSize
    }

    /// Names the settings in each entry's key: `image-png`, `image-jpeg-q80`,
    /// `image-heic-q60-max1024`. The quality is in whole percent, rounded.
    public var id: String {
        var id = "image-\(format.rawValue)"
        if format.isLossy { id += "-q\(Int((quality * 100).rounded()))" }
        if let maxPixelSize { id += "-max\(maxPixelSize)" }
        return id
    }
}
