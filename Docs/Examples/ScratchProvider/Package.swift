// swift-tools-version:6.3
//
// A third-party provider in a package of its own: the `scratch` provider, the `buckia` command
// line with it added, and the conformance suite run over it. Buckia's CI builds and tests it
// (Tools/check/check-example), so what it shows keeps working.
import Foundation
import PackageDescription

// A real third party depends on Buckia by URL, and refers to its products with the package
// identity `buckia`:
//
//     .package(url: "https://github.com/<owner>/buckia.git", from: "1.0.0")
//     .product(name: "BuckiaCore", package: "buckia")
//
// This example sits inside Buckia's own repository and depends on it by path instead, so that
// it builds against the Buckia next to it. A path dependency's identity is the last component
// of its folder's name, lowercased and without a `.git` suffix, and a clone may be named
// anything (`buckia`, `main`, `Buckia-pr-42`), so the identity is worked out here from where
// this manifest lies: three folders up.
let buckiaFolder = URL(fileURLWithPath: Context.packageDirectory, isDirectory: true)
    .appendingPathComponent("../../..").standardizedFileURL
let buckia: String = {
    let name = buckiaFolder.lastPathComponent
    return (name.hasSuffix(".git") ? String(name.dropLast(4)) : name).lowercased()
}()

let package = Package(
    name: "ScratchProvider",
    // Buckia's own floor: a package cannot target an older macOS than what it depends on.
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ScratchProvider", targets: ["ScratchProvider"]),
        // Not `buckia`: Buckia's own executable product has that name, and SwiftPM links both
        // to .build/<configuration>/buckia without a word, keeping Buckia's (which knows no
        // `scratch`); `swift run buckia` runs Buckia's too. So the tool is `scratch-buckia`.
        .executable(name: "scratch-buckia", targets: ["ScratchCLI"]),
    ],
    dependencies: [
        .package(path: "../../.."),
    ],
    targets: [
        .target(
            name: "ScratchProvider",
            dependencies: [.product(name: "BuckiaCore", package: buckia), .product(name: "BuckiaProviderKit", package: buckia)]),
        // The module is not called `buckia`: beside Buckia's `Buckia` module, the two would
        // share build folders on a case-insensitive file system.
        .executableTarget(
            name: "ScratchCLI",
            dependencies: ["ScratchProvider", .product(name: "BuckiaCommandLine", package: buckia)],
            path: "Sources/buckia"),
        .testTarget(
            name: "ScratchProviderTests",
            dependencies: [
                "ScratchProvider",
                .product(name: "BuckiaCore", package: buckia),
                .product(name: "BuckiaConformance", package: buckia),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
