// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "MyApp",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17)],  // Buckia's floor; Linux needs no entry
    dependencies: [.package(url: "https://git.example.com/buckia.git", from: "0.9.0")],
    targets: [
        .executableTarget(name: "MyApp", dependencies: [.product(name: "Buckia", package: "buckia")]),
    ]
)
