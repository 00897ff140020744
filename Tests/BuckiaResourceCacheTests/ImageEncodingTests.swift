import BuckiaCore
import BuckiaResourceCache
import Foundation
import Testing

/// The settings of seed 004's image encodings. The processor that applies them is ImageIO's
/// (Apple platforms only; Docs/Platforms.md); its id, and so every cache key, comes from here.
@Suite("Image encodings: settings, checks and ids")
struct ImageEncodingTests {
    @Test("Each setting is in the id, so changing one caches anew; PNG ignores the quality", arguments: [
        (ImageEncoding.Format.png, 0.8, nil as Int?, "image-png"), (.png, 0.3, 512, "image-png-max512"), (.jpeg, 0.8, nil, "image-jpeg-q80"),
        (.jpeg, 0.806, nil, "image-jpeg-q81"), (.heic, 0.6, 1024, "image-heic-q60-max1024"), (.heic, 0, 1, "image-heic-q0-max1"),
    ])
    func ids(_ format: ImageEncoding.Format, _ quality: Double, _ maxPixelSize: Int?, _ id: String) throws {
        #expect(try ImageEncoding(format: format, quality: quality, maxPixelSize: maxPixelSize).id == id)
    }

    @Test("The seed's default is PNG at full size")
    func defaults() throws {
        let encoding = try ImageEncoding()
        #expect(encoding.format == .png && encoding.maxPixelSize == nil && encoding.id == "image-png")
        #expect(ImageEncoding.Format.allCases.map(\.uniformType) == ["public.png", "public.jpeg", "public.heic"])
    }

    @Test("A quality outside 0…1 or a pixel size outside 1…32768 is refused, never clamped", arguments: [
        (1.5, nil as Int?), (-0.1, nil), (Double.nan, nil), (Double.infinity, nil), (0.8, 0), (0.8, -5), (0.8, (1 << 15) + 1), (0.8, Int.max),
    ])
    func refused(_ quality: Double, _ maxPixelSize: Int?) {
        let error = #expect(throws: BuckiaError.self) { try ImageEncoding(format: .jpeg, quality: quality, maxPixelSize: maxPixelSize) }
        #expect(error?.code == .invalidConfiguration)
    }
}
