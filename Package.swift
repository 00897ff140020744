// swift-tools-version:6.3
//
// 6.3: BuckiaConformanceTesting reports a skipped scenario with Swift Testing's Test.cancel,
// which Swift 6.3 introduced.
//
// Buckia: one API over many storage backends, and the engines that keep local data.
//
// Layout (one target per folder, `path:` points at it):
//   Core/       system-library shims and the contracts every plugin implements
//   Providers/  remote and local object stores (StorageProvider plugins)
//   Engines/    key-value persistence (StorageEngine plugins)
//   Tools/      the umbrella library, the conformance library, the command line
//   Tests/      one test target per target, plus the cross-plugin conformance run
//
// "packages: none": this manifest declares no package dependencies. Everything beyond
// Foundation comes from system C libraries through `.systemLibrary` targets.
import Foundation
import PackageDescription

// BUCKIA_PORTABLE=1 builds Buckia on Linux the way Apple platforms build it: no libcurl (HTTP
// goes through URLSession), no CLinux fast paths (openat2, O_TMPFILE, syncfs, sync_file_range,
// inotify, thread names), so the POSIX paths Apple platforms take are compiled and tested here.
// Cryptography still goes through BuckiaCrypto, over libcrypto. Use a build folder of its own:
//   BUCKIA_PORTABLE=1 swift test --scratch-path .build-portable
let portable = Context.environment["BUCKIA_PORTABLE"] == "1"
/// CLinux where the build has Linux's fast paths.
let linuxFastPaths: [Target.Dependency] = portable ? [] : [.target(name: "CLinux", condition: .when(platforms: [.linux]))]
/// libcurl, the HTTP transport on Linux unless the build is portable.
let libcurl: [Target.Dependency] = portable ? [] : [.target(name: "CCurl", condition: .when(platforms: [.linux]))]
/// Where the server and the tools are built: a Mac or a Linux machine. On iOS and tvOS the
/// gateway is left out of the umbrella, and `buckia`, `buckia-bench` and `buckia-fuzz` depend
/// on nothing and compile to empty programs (SwiftPM has no per-platform products).
let desktop = TargetDependencyCondition.when(platforms: [.macOS, .linux])

let package = Package(
    name: "Buckia",
    // The seeds' apps: macOS 14, iOS 17, tvOS 17. Linux is where CI builds and tests every
    // commit; on Apple platforms cryptography is CryptoKit and HTTP is URLSession, so nothing
    // links libcrypto or libcurl there (Docs/Platforms.md).
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17)],
    products: [
        .library(name: "Buckia", targets: ["Buckia"]),
        .library(name: "BuckiaCore", targets: ["BuckiaCore"]),
        .library(name: "BuckiaProviderKit", targets: ["BuckiaProviderKit"]),
        .library(name: "BuckiaUserFolder", targets: ["BuckiaUserFolder"]),
        .library(name: "BuckiaClient", targets: ["BuckiaClient"]),
        .library(name: "BuckiaSync", targets: ["BuckiaSync"]),
        .library(name: "BuckiaHTTP", targets: ["BuckiaHTTP"]),
        .library(name: "BuckiaSQLite", targets: ["BuckiaSQLite"]),
        .library(name: "BuckiaSigV4", targets: ["BuckiaSigV4"]),
        .library(name: "BuckiaChunks", targets: ["BuckiaChunks"]),
        .library(name: "BuckiaDatabase", targets: ["BuckiaDatabase"]),
        .library(name: "BuckiaCatalog", targets: ["BuckiaCatalog"]),
        .library(name: "BuckiaResourceCache", targets: ["BuckiaResourceCache"]),
        .library(name: "BuckiaSecurity", targets: ["BuckiaSecurity"]),
        .library(name: "BuckiaOAuth", targets: ["BuckiaOAuth"]),
        .library(name: "BuckiaGateway", targets: ["BuckiaGateway"]),
        .library(name: "BuckiaLocal", targets: ["BuckiaLocal"]),
        .library(name: "BuckiaS3", targets: ["BuckiaS3"]),
        .library(name: "BuckiaB2", targets: ["BuckiaB2"]),
        .library(name: "BuckiaBunny", targets: ["BuckiaBunny"]),
        .library(name: "BuckiaMemory", targets: ["BuckiaMemory"]),
        .library(name: "BuckiaMemoryEngine", targets: ["BuckiaMemoryEngine"]),
        .library(name: "BuckiaSQLiteEngine", targets: ["BuckiaSQLiteEngine"]),
        .library(name: "BuckiaDiskEngine", targets: ["BuckiaDiskEngine"]),
        .library(name: "BuckiaChunkEngine", targets: ["BuckiaChunkEngine"]),
        .library(name: "BuckiaConformance", targets: ["BuckiaConformance", "BuckiaConformanceTesting"]),
        .library(name: "BuckiaSyncConformance", targets: ["BuckiaSyncConformance"]),
        .library(name: "BuckiaCatalogConformance", targets: ["BuckiaCatalogConformance"]),
        .library(name: "BuckiaResourceCacheConformance", targets: ["BuckiaResourceCacheConformance"]),
        .library(name: "BuckiaCommandLine", targets: ["BuckiaCommandLine"]),
        .executable(name: "buckia", targets: ["BuckiaCLI"]),
        .executable(name: "buckia-bench", targets: ["BuckiaBench"]),
        .executable(name: "buckia-fuzz", targets: ["BuckiaFuzz"]),
    ],
    targets: [
        // MARK: System libraries
        .systemLibrary(
            name: "CSQLite", path: "Core/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Core/COpenSSL", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(
            name: "CZlib", path: "Core/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),

        .systemLibrary(name: "CLinux", path: "Core/CLinux"),
        .systemLibrary(
            name: "CCurl", path: "Core/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        .systemLibrary(name: "CChecksum", path: "Core/CChecksum"),
        .systemLibrary(name: "CXattr", path: "Core/CXattr"),

        // MARK: Core
        // CryptoKit's API: CryptoKit itself on Apple platforms, the subset Buckia calls over
        // libcrypto everywhere else. Every other target calls cryptography through it.
        .target(
            name: "BuckiaCrypto", dependencies: [.target(name: "COpenSSL", condition: .when(platforms: [.linux]))], path: "Core/BuckiaCrypto"),
        .target(name: "BuckiaCore", dependencies: ["BuckiaCrypto", "CZlib", "CChecksum"] + linuxFastPaths, path: "Core/BuckiaCore"),
        // What providers share beyond the contracts: listers that page, filter and resume a
        // listing for a backend that has less, and part uploads staged in the provider itself.
        .target(name: "BuckiaProviderKit", dependencies: ["BuckiaCore"], path: "Core/BuckiaProviderKit"),
        // The seed app's user folder and its inbound changes: what BuckiaClient syncs and
        // BuckiaDatabase applies, in a module both depend on.
        .target(name: "BuckiaUserFolder", dependencies: ["BuckiaCore"], path: "Core/BuckiaUserFolder"),
        .target(
            name: "BuckiaHTTP", dependencies: ["BuckiaCore"] + libcurl, path: "Core/BuckiaHTTP"),
        .target(name: "BuckiaSQLite", dependencies: ["BuckiaCore", "CSQLite"], path: "Core/BuckiaSQLite"),
        .target(name: "BuckiaSigV4", dependencies: ["BuckiaCore"], path: "Core/BuckiaSigV4"),
        .target(name: "BuckiaClient", dependencies: ["BuckiaCore", "BuckiaUserFolder", "BuckiaSync", "BuckiaLocal"], path: "Core/BuckiaClient"),
        // inotify for `sync --watch` comes with the Linux fast paths; without them it polls.
        .target(name: "BuckiaSync", dependencies: ["BuckiaCore", "BuckiaSQLite"] + linuxFastPaths, path: "Core/BuckiaSync"),
        .target(name: "BuckiaChunks", dependencies: ["BuckiaCore"], path: "Core/BuckiaChunks"),
        .target(name: "BuckiaDatabase", dependencies: ["BuckiaCore", "BuckiaUserFolder", "BuckiaCrypto", "BuckiaSecurity", "BuckiaSQLite"], path: "Core/BuckiaDatabase"),
        .target(name: "BuckiaCatalog", dependencies: ["BuckiaCore", "BuckiaSQLite", "BuckiaSync"], path: "Core/BuckiaCatalog"),
        .target(name: "BuckiaResourceCache", dependencies: ["BuckiaCore", "BuckiaSQLite", "BuckiaHTTP", "CXattr"], path: "Core/BuckiaResourceCache"),
        .target(name: "BuckiaSecurity", dependencies: ["BuckiaCore", "BuckiaCrypto"], path: "Core/BuckiaSecurity"),
        // OAuth needs HTTP, which BuckiaSecurity does not: a target of its own keeps that one on BuckiaCore.
        .target(name: "BuckiaOAuth", dependencies: ["BuckiaCore", "BuckiaSecurity", "BuckiaHTTP"], path: "Core/BuckiaOAuth"),
        // The S3 gateway (`buckia serve s3`): SigV4 checked, Buckia grants enforced.
        .target(name: "BuckiaGateway", dependencies: ["BuckiaCore", "BuckiaProviderKit", "BuckiaSecurity", "BuckiaSigV4"], path: "Core/BuckiaGateway"),

        // MARK: Providers
        .target(name: "BuckiaMemory", dependencies: ["BuckiaCore", "BuckiaProviderKit"], path: "Providers/BuckiaMemory"),
        .target(name: "BuckiaLocal", dependencies: ["BuckiaCore", "BuckiaProviderKit", "CXattr"], path: "Providers/BuckiaLocal"),
        .target(name: "BuckiaS3", dependencies: ["BuckiaCore", "BuckiaProviderKit", "BuckiaHTTP", "BuckiaSigV4", "BuckiaSecurity"], path: "Providers/BuckiaS3"),
        .target(name: "BuckiaB2", dependencies: ["BuckiaCore", "BuckiaProviderKit", "BuckiaHTTP", "BuckiaSecurity"], path: "Providers/BuckiaB2"),
        .target(name: "BuckiaBunny", dependencies: ["BuckiaCore", "BuckiaProviderKit", "BuckiaHTTP", "BuckiaSecurity"], path: "Providers/BuckiaBunny"),

        // MARK: Engines
        .target(name: "BuckiaMemoryEngine", dependencies: ["BuckiaCore"], path: "Engines/BuckiaMemoryEngine"),
        .target(
            name: "BuckiaSQLiteEngine", dependencies: ["BuckiaCore", "BuckiaSQLite"], path: "Engines/BuckiaSQLiteEngine"),
        .target(name: "BuckiaDiskEngine", dependencies: ["BuckiaCore"], path: "Engines/BuckiaDiskEngine"),
        .target(
            name: "BuckiaChunkEngine", dependencies: ["BuckiaCore", "BuckiaChunks"], path: "Engines/BuckiaChunkEngine"),

        // MARK: Tools
        .target(
            name: "Buckia",
            dependencies: [
                "BuckiaCore", "BuckiaProviderKit", "BuckiaUserFolder", "BuckiaClient", "BuckiaHTTP", "BuckiaSQLite", "BuckiaMemory", "BuckiaLocal", "BuckiaMemoryEngine",
                "BuckiaSQLiteEngine", "BuckiaDiskEngine", "BuckiaS3", "BuckiaB2", "BuckiaBunny", "BuckiaSigV4", "BuckiaSync",
                "BuckiaChunks", "BuckiaChunkEngine", "BuckiaDatabase", "BuckiaSecurity", "BuckiaOAuth", "BuckiaCatalog", "BuckiaResourceCache",
                // The S3 server: what a Mac or a Linux machine runs, never an app on iOS or tvOS.
                .target(name: "BuckiaGateway", condition: desktop),
            ],
            path: "Tools/Buckia"),
        // The suite a third-party provider or engine links: the contracts and nothing that
        // brings SQLite or libcurl (ProductBoundaryTests holds it to that).
        .target(name: "BuckiaConformance", dependencies: ["BuckiaCore", "BuckiaChunks"], path: "Tools/BuckiaConformance"),
        // Swift Testing glue in a module of its own, so the command line never links Testing.
        .target(name: "BuckiaConformanceTesting", dependencies: ["BuckiaConformance", "BuckiaCore", "BuckiaChunks"], path: "Tools/BuckiaConformanceTesting"),
        // The scenario lists of the parts built on SQLite, each a library of its own, with its
        // Swift Testing glue: sync (its state store), the file catalog, the resource cache.
        .target(
            name: "BuckiaSyncConformance", dependencies: ["BuckiaConformance", "BuckiaConformanceTesting", "BuckiaCore", "BuckiaSync"],
            path: "Tools/BuckiaSyncConformance"),
        .target(
            name: "BuckiaCatalogConformance", dependencies: ["BuckiaConformance", "BuckiaConformanceTesting", "BuckiaCore", "BuckiaCatalog", "BuckiaMemory"],
            path: "Tools/BuckiaCatalogConformance"),
        .target(
            name: "BuckiaResourceCacheConformance",
            dependencies: ["BuckiaConformance", "BuckiaConformanceTesting", "BuckiaCore", "BuckiaResourceCache", "BuckiaMemory"],
            path: "Tools/BuckiaResourceCacheConformance"),
        .target(
            name: "BuckiaCommandLine", dependencies: ["Buckia", "BuckiaConformance", "BuckiaHTTP", "BuckiaSQLite", "BuckiaDatabase", "BuckiaResourceCache"],
            path: "Tools/BuckiaCommandLine"),
        .executableTarget(name: "BuckiaCLI", dependencies: [.target(name: "BuckiaCommandLine", condition: desktop)], path: "Tools/BuckiaCLI"),
        // The parsers of outside input as fuzz targets (Tools/fuzz/fuzz runs them under libFuzzer;
        // FuzzTests replays what they keep), and the binary that drives them.
        .target(
            name: "BuckiaFuzzTargets",
            dependencies: ["BuckiaCore", "BuckiaProviderKit", "BuckiaSigV4", "BuckiaSecurity", "BuckiaChunks", "BuckiaDatabase", "BuckiaGateway", "BuckiaHTTP", "BuckiaS3", "BuckiaB2", "BuckiaBunny"],
            path: "Tools/BuckiaFuzzTargets"),
        .executableTarget(
            name: "BuckiaFuzz", dependencies: [.target(name: "BuckiaFuzzTargets", condition: desktop), .target(name: "CLinux", condition: desktop)],
            path: "Tools/BuckiaFuzz"),
        // libcrypto directly, as the limit its crypto section compares Buckia with.
        .executableTarget(
            name: "BuckiaBench",
            dependencies: ["Buckia", "BuckiaHTTP", "BuckiaTestSupport", "BuckiaSQLite", "BuckiaDatabase", "BuckiaCatalog", "CSQLite", "CChecksum"].map {
                .target(name: $0, condition: desktop)
            } + [.target(name: "COpenSSL", condition: .when(platforms: [.linux]))],
            path: "Tools/BuckiaBench"),

        // MARK: Tests
        .target(
            name: "BuckiaTestSupport", dependencies: ["BuckiaCore", "BuckiaUserFolder", "BuckiaHTTP", "BuckiaSigV4", "BuckiaSQLite", "BuckiaDatabase", "BuckiaClient", "BuckiaSync", "BuckiaLocal", "CLinux"], path: "Tests/BuckiaTestSupport",
            resources: [.copy("Resources")]),
        .testTarget(name: "BuckiaCryptoTests", dependencies: ["BuckiaCrypto"], path: "Tests/BuckiaCryptoTests"),
        .testTarget(name: "BuckiaCoreTests", dependencies: ["BuckiaCore", "BuckiaProviderKit", "BuckiaTestSupport"], path: "Tests/BuckiaCoreTests"),
        .testTarget(
            name: "BuckiaHTTPTests", dependencies: ["BuckiaHTTP", "BuckiaCore", "BuckiaTestSupport"], path: "Tests/BuckiaHTTPTests",
            resources: [.copy("Resources")]),
        .testTarget(name: "BuckiaSigV4Tests", dependencies: ["BuckiaSigV4"], path: "Tests/BuckiaSigV4Tests", resources: [.copy("Vectors")]),
        .testTarget(
            name: "BuckiaBunnyTests",
            dependencies: [
                "BuckiaBunny", "BuckiaCore", "BuckiaHTTP", "BuckiaConformance", "BuckiaConformanceTesting", "BuckiaSyncConformance", "BuckiaTestSupport",
                "BuckiaLocal", "BuckiaChunks",
            ],
            path: "Tests/BuckiaBunnyTests"),
        .testTarget(
            name: "BuckiaB2Tests",
            dependencies: [
                "BuckiaB2", "BuckiaConformance", "BuckiaConformanceTesting", "BuckiaSyncConformance", "BuckiaHTTP", "BuckiaCore", "BuckiaTestSupport",
                "BuckiaSync", "BuckiaLocal", "BuckiaChunks", "BuckiaClient", "BuckiaSecurity",
            ],
            path: "Tests/BuckiaB2Tests"),
        .testTarget(
            name: "BuckiaS3Tests",
            dependencies: [
                "BuckiaS3", "BuckiaConformance", "BuckiaConformanceTesting", "BuckiaSyncConformance", "BuckiaSigV4", "BuckiaHTTP", "BuckiaCore",
                "BuckiaTestSupport", "BuckiaLocal", "BuckiaSync", "BuckiaChunks", "BuckiaChunkEngine", "BuckiaDiskEngine", "BuckiaClient",
            ],
            path: "Tests/BuckiaS3Tests"),
        .testTarget(name: "BuckiaSQLiteTests", dependencies: ["BuckiaSQLite"], path: "Tests/BuckiaSQLiteTests"),
        .testTarget(
            name: "BuckiaSQLiteEngineTests", dependencies: ["BuckiaSQLiteEngine"], path: "Tests/BuckiaSQLiteEngineTests"),
        .testTarget(
            name: "BuckiaDatabaseTests", dependencies: ["BuckiaDatabase", "BuckiaUserFolder", "BuckiaCore", "BuckiaSQLite", "BuckiaLocal", "BuckiaClient", "Buckia", "BuckiaTestSupport"],
            path: "Tests/BuckiaDatabaseTests"),
        .testTarget(
            name: "BuckiaSecurityTests", dependencies: ["BuckiaSecurity", "BuckiaCore", "BuckiaTestSupport"], path: "Tests/BuckiaSecurityTests"),
        .testTarget(
            name: "BuckiaGatewayTests",
            dependencies: [
                "BuckiaGateway", "BuckiaSecurity", "BuckiaSigV4", "BuckiaCore", "BuckiaProviderKit", "BuckiaTestSupport", "BuckiaS3", "BuckiaLocal", "BuckiaMemory",
                "BuckiaB2", "BuckiaBunny", "BuckiaConformance", "BuckiaConformanceTesting", "BuckiaSyncConformance", "BuckiaHTTP", "BuckiaOAuth",
                "BuckiaDatabase", "BuckiaClient", "BuckiaSQLite", "CLinux",
            ],
            path: "Tests/BuckiaGatewayTests", exclude: ["Clients"]),
        .testTarget(
            name: "BuckiaOAuthTests", dependencies: ["BuckiaOAuth", "BuckiaSecurity", "BuckiaCore", "BuckiaHTTP", "BuckiaTestSupport"],
            path: "Tests/BuckiaOAuthTests"),
        .testTarget(name: "BuckiaSyncTests", dependencies: ["BuckiaSync", "BuckiaCore", "BuckiaSQLite", "BuckiaMemory", "BuckiaLocal", "BuckiaTestSupport"], path: "Tests/BuckiaSyncTests"),
        .testTarget(name: "BuckiaClientTests", dependencies: ["BuckiaClient", "BuckiaUserFolder", "Buckia", "BuckiaTestSupport"], path: "Tests/BuckiaClientTests"),
        .testTarget(name: "BuckiaLocalTests", dependencies: ["BuckiaLocal", "BuckiaProviderKit", "BuckiaTestSupport"], path: "Tests/BuckiaLocalTests"),
        .testTarget(
            name: "BuckiaResourceCacheTests", dependencies: ["BuckiaResourceCache", "BuckiaCore", "BuckiaHTTP", "BuckiaMemory", "BuckiaTestSupport"], path: "Tests/BuckiaResourceCacheTests",
            resources: [.copy("Resources")]),
        .testTarget(
            name: "BuckiaCatalogTests",
            dependencies: [
                "BuckiaCatalog", "BuckiaCore", "BuckiaSQLite", "BuckiaMemory", "BuckiaSync", "BuckiaConformance", "BuckiaConformanceTesting",
                "BuckiaCatalogConformance", "BuckiaTestSupport",
            ],
            path: "Tests/BuckiaCatalogTests"),
        .testTarget(
            name: "BuckiaChunksTests",
            dependencies: [
                "BuckiaChunks", "BuckiaChunkEngine", "BuckiaDiskEngine", "BuckiaCore", "BuckiaLocal", "BuckiaTestSupport", "BuckiaConformance",
                "BuckiaConformanceTesting", "Buckia",
            ],
            path: "Tests/BuckiaChunksTests"),
        .testTarget(
            name: "BuckiaDiskEngineTests", dependencies: ["BuckiaDiskEngine", "BuckiaCore", "BuckiaConformance", "BuckiaConformanceTesting"],
            path: "Tests/BuckiaDiskEngineTests"),
        .testTarget(
            name: "ConformanceTests",
            dependencies: [
                "Buckia", "BuckiaConformance", "BuckiaConformanceTesting", "BuckiaSyncConformance", "BuckiaResourceCacheConformance", "BuckiaResourceCache",
                "BuckiaProviderKit", "BuckiaTestSupport",
            ],
            path: "Tests/ConformanceTests", exclude: ["README.md"]),
        .testTarget(name: "FuzzTests", dependencies: ["BuckiaFuzzTargets"], path: "Tests/FuzzTests"),
        .testTarget(
            name: "BuckiaReliabilityTests",
            dependencies: [
                "BuckiaS3", "BuckiaB2", "BuckiaBunny", "BuckiaGateway", "BuckiaSecurity", "BuckiaSigV4", "BuckiaLocal", "BuckiaHTTP", "BuckiaCore",
                "BuckiaTestSupport",
            ],
            path: "Tests/BuckiaReliabilityTests"),
        .testTarget(
            name: "BuckiaCLITests", dependencies: ["BuckiaCommandLine", "Buckia", "BuckiaHTTP", "BuckiaSQLite", "BuckiaDatabase", "BuckiaSigV4", "BuckiaTestSupport"],
            path: "Tests/BuckiaCLITests"),
    ],
    swiftLanguageModes: [.v6]
)

// Every Swift snippet in README.md and Docs/ is the main.swift of an executable target of its
// own under Tests/DocSnippets (Tools/check/doc-snippets writes them from the pages, and a test fails
// when the two differ), so the build compiles each exactly as it is shown, imports included.
let snippetFolder = Context.packageDirectory + "/Tests/DocSnippets"
let snippetNames = ((try? FileManager.default.contentsOfDirectory(atPath: snippetFolder)) ?? []).filter { $0.hasPrefix("Snippet_") }.sorted()
package.targets += snippetNames.map { name in
    .executableTarget(
        name: name,
        dependencies: [
            "Buckia", "BuckiaCore", "BuckiaProviderKit", "BuckiaUserFolder", "BuckiaConformance", "BuckiaConformanceTesting", "BuckiaSyncConformance",
            "BuckiaCatalogConformance", "BuckiaResourceCacheConformance", "BuckiaCommandLine", "BuckiaResourceCache",
        ],
        path: "Tests/DocSnippets/\(name)")
}
