// swift-tools-version:6.1
//
// Compiles Buckia's cryptographic call sites against apple/swift-crypto, whose `Crypto` module
// has CryptoKit's API on Linux, and runs the same known-answer tests on them: the check that the
// code Apple platforms will build against CryptoKit compiles and answers alike, on a machine
// that cannot build for Apple platforms.
//
// Not part of Buckia: a package of its own, which no Buckia product depends on, so Buckia's
// own manifest keeps "packages: none". The sources are Buckia's, through symbolic links:
//   Sources/BuckiaCore, BuckiaSecurity, CZlib, CChecksum, CLinux -> ../../../../Core/…
//   Sources/BuckiaCrypto: `@_exported import Crypto` in place of Buckia's facade, and Buckia's
//     RSAPublicKey.swift (linked) checked through _CryptoExtras (CryptoKit has no RSA)
//   Tests/BuckiaCryptoTests -> Buckia's tests of the facade, which name only CryptoKit's API
//   Tests/CallSiteTests: Buckia's HMAC, AES-GCM and scrypt known-answer tests
//
// Run: Tools/check/cryptokit-check/run (Tools/test runs it).
import PackageDescription

let package = Package(
    name: "BuckiaCryptoKitCheck",
    dependencies: [.package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2")],
    targets: [
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib"),
        .systemLibrary(name: "CChecksum", path: "Sources/CChecksum"),
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        .target(
            name: "BuckiaCrypto",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto")],
            path: "Sources/BuckiaCrypto"),
        .target(name: "BuckiaCore", dependencies: ["BuckiaCrypto", "CZlib", "CChecksum", "CLinux"], path: "Sources/BuckiaCore"),
        .target(name: "BuckiaSecurity", dependencies: ["BuckiaCore", "BuckiaCrypto"], path: "Sources/BuckiaSecurity"),
        // BUCKIA_SWIFT_CRYPTO: the one place the tests allow swift-crypto to differ from CryptoKit
        // (the error a failed AES-GCM tag check throws).
        .testTarget(
            name: "BuckiaCryptoTests", dependencies: ["BuckiaCrypto"], path: "Tests/BuckiaCryptoTests",
            swiftSettings: [.define("BUCKIA_SWIFT_CRYPTO")]),
        .testTarget(name: "CallSiteTests", dependencies: ["BuckiaCore", "BuckiaSecurity"], path: "Tests/CallSiteTests"),
    ],
    swiftLanguageModes: [.v6]
)
