import Foundation
import Testing

/// The rule that keeps Apple platforms buildable from a machine that cannot build for them: only
/// the files listed here may import Glibc or a Linux-only C module, or call libcrypto, libcurl or
/// a Linux-only system call. Every other line of Buckia compiles the same everywhere, and the
/// portable build (`BUCKIA_PORTABLE=1`) compiles and tests it here. Docs/Platforms.md gives the
/// list with its reasons.
struct PlatformSourceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Files that may use what Linux alone has (each keeps a POSIX path beside it, or is a tool
    /// that is only built for Linux).
    static let linuxOnly: [String: String] = [
        "Core/BuckiaCore/Platform/SystemCalls.swift": "the one place CLinux's fast paths are called, each with the POSIX path Apple platforms take",
        "Core/BuckiaSync/FolderWatcher.swift": "inotify, compiled only with CLinux; elsewhere a watch polls",
        "Core/BuckiaCore/Support/DirectoryHandle.swift": "looks for /proc/self/fd before naming an O_TMPFILE file, and does without it",
        "Tools/BuckiaConformance/MemoryProbe.swift": "reads /proc/self/statm where it exists; elsewhere the memory check is skipped by a declared capability",
        "Tools/BuckiaConformance/ProviderScenarios+Transfers.swift": "names /proc/self/statm in the skip message",
    ]
    /// Folders of Linux-only code: libcurl's transport (absent without CCurl), CryptoKit's API
    /// over libcrypto (absent where CryptoKit exists), and the Linux tools.
    static let linuxOnlyFolders = ["Core/BuckiaHTTP/Curl/", "Core/BuckiaCrypto/OpenSSL/", "Tools/BuckiaBench/", "Tools/BuckiaFuzz/"]

    /// What only Linux has, or what Buckia reaches only through the files above.
    static let forbidden: [(pattern: String, what: String)] = [
        (#"^\s*(@_implementationOnly |internal |public |package )?import (Glibc|Musl|CLinux|CCurl|COpenSSL)\b"#, "imports a Linux-only module"),
        (#"\b(EVP|RAND|ERR|HMAC|SHA256|SHA1|MD5)_[A-Za-z0-9_]+\("#, "calls libcrypto"),
        (#"\bcurl_[a-z_]+\("#, "calls libcurl"),
        (#"\b(inotify_[a-z0-9_]+|sync_file_range|syncfs|fdatasync|prctl|mallopt|pipe2|openat2|epoll_[a-z_]+|eventfd)\("#, "calls a Linux-only system call"),
        (#"\b(O_TMPFILE|MSG_NOSIGNAL|SOCK_CLOEXEC|FICLONE)\b|SOCK_STREAM\.rawValue|"/proc/"#, "uses a Linux-only constant or /proc"),
    ]

    static func sources(in tops: [String] = ["Core", "Providers", "Engines", "Tools"]) throws -> [String] {
        var found: [String] = []
        for top in tops {
            let base = root.appendingPathComponent(top)
            guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isSymbolicLinkKey]) else { continue }
            for case let url as URL in walker {
                let relative = String(url.path.dropFirst(root.path.count + 1))
                // The verification package's sources are Buckia's own, through links, plus swift-crypto's build.
                if relative.hasPrefix("Tools/check/cryptokit-check/") || relative.contains("/.build") { walker.skipDescendants(); continue }
                if url.pathExtension == "swift" { found.append(relative) }
            }
        }
        return found.sorted()
    }

    /// Words one of the rules needs in a line before its pattern is tried (regular expressions
    /// over every line of every file are slow in a debug build).
    static let clues = [
        "import", "EVP_", "RAND_", "ERR_", "HMAC_", "SHA", "MD5_", "curl_", "inotify_", "sync_file_range", "syncfs", "fdatasync", "prctl",
        "mallopt", "pipe2", "openat2", "epoll_", "eventfd", "O_TMPFILE", "MSG_NOSIGNAL", "SOCK_", "FICLONE", "/proc/",
    ]

    /// Every line of `text` that breaks a rule, as "line: what".
    static func violations(in text: String) throws -> [String] {
        let rules = try forbidden.map { (try Regex($0.pattern), $0.what) }
        var found: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = line.trimmingCharacters(in: .whitespaces)
            if code.hasPrefix("//") || !clues.contains(where: line.contains) { continue }
            for (rule, what) in rules where line.contains(rule) {
                found.append("\(number + 1): \(what): \(code)")
            }
        }
        return found
    }

    @Test("No file outside the listed Linux-only ones imports Glibc, CLinux, CCurl or COpenSSL, or calls libcrypto, libcurl or a Linux-only system call")
    func onlyListedFilesUseLinux() throws {
        let files = try Self.sources()
        #expect(files.count > 300, "found only \(files.count) Swift files under \(Self.root.path)")
        for file in files where Self.linuxOnly[file] == nil && !Self.linuxOnlyFolders.contains(where: file.hasPrefix) {
            let problems = try Self.violations(in: String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8))
            #expect(problems.isEmpty, "\(file) is not listed as Linux-only but:\n\(problems.joined(separator: "\n"))")
        }
        for listed in Self.linuxOnly.keys {
            #expect(files.contains(listed), "\(listed) is listed as Linux-only but does not exist")
        }
    }

    /// Files compiled only where an Apple framework exists: never compiled here. Each is small,
    /// and wholly inside `#if canImport(...)`; Docs/Platforms.md lists them with their lines.
    static let appleOnly: [String: String] = [
        "Core/BuckiaCrypto/CryptoKit.swift": "CryptoKit itself, re-exported",
        "Core/BuckiaCrypto/Apple/RSA+Security.swift": "RS256 signature checks through the Security framework (CryptoKit has no RSA)",
        "Core/BuckiaSecurity/Apple/KeychainItems+Security.swift": "the Keychain store's four Security-framework calls",
        "Core/BuckiaResourceCache/Apple/ImageIOProcessor.swift": "seed 004's image encodings and thumbnails through ImageIO",
        "Tools/Buckia/Apple/SwiftUI+Buckia.swift": "the client and model in SwiftUI's environment",
    ]

    static let appleImport = #"^\s*(@_exported |@_implementationOnly |internal |public |package )?import (CryptoKit|Security|ImageIO|SwiftUI|UIKit|AppKit|CoreGraphics|UniformTypeIdentifiers|Combine)\b"#

    @Test("Only the listed Apple-only files import an Apple-only framework, and each is wholly inside #if canImport")
    func onlyListedFilesUseApple() throws {
        let rule = try Regex(Self.appleImport)
        for file in try Self.sources() {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            let imports = lines.filter { !$0.hasPrefix("//") && $0.contains(rule) }
            guard Self.appleOnly[file] != nil else {
                #expect(imports.isEmpty, "\(file) is not listed as Apple-only but imports \(imports)")
                continue
            }
            let code = lines.filter { !$0.isEmpty && !$0.hasPrefix("//") }
            #expect(code.first?.hasPrefix("#if canImport(") == true && code.last == "#endif", "\(file) is not wholly inside #if canImport(...)")
            #expect(!imports.isEmpty, "\(file) is listed as Apple-only but imports no Apple framework")
        }
        for listed in Self.appleOnly.keys {
            #expect(try Self.sources().contains(listed), "\(listed) is listed as Apple-only but does not exist")
        }
    }

    /// What Apple ships only after the platforms Buckia supports (macOS 14, iOS 17, tvOS 17):
    /// task executors, and the Synchronization module's atomics and mutex.
    static let newerThanTargets =
        #"\bTaskExecutor\b|executorPreference:|withTaskExecutorPreference|globalConcurrentExecutor|^\s*(public |internal |package )?import Synchronization\b|\b(Atomic|Mutex)(<|\()"#

    /// Files that use it, each behind `@available` and `#available`.
    static let newerThanTargetsFiles: [String: String] = [
        "Core/BuckiaGateway/GatewayExecutor.swift": "the gateway's own task executor (macOS 15 and later); on macOS 14 its calls run on the cooperative pool",
    ]

    @Test("Only the listed files use what Apple ships after macOS 14, iOS 17 and tvOS 17, and each guards it with availability")
    func onlyListedFilesUseNewerAPIs() throws {
        let rule = try Regex(Self.newerThanTargets)
        let files = try Self.sources(in: ["Core", "Providers", "Engines", "Tools", "Tests"])
        #expect(files.contains("Tests/BuckiaCoreTests/PlatformSourceTests.swift"), "the tests' own files are not among the \(files.count) read")
        for file in files where file != "Tests/BuckiaCoreTests/PlatformSourceTests.swift" {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let uses = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.hasPrefix("//") && $0.contains(rule) }
            if Self.newerThanTargetsFiles[file] == nil {
                #expect(uses.isEmpty, "\(file) uses what macOS 14, iOS 17 or tvOS 17 lacks:\n\(uses.joined(separator: "\n"))")
            } else {
                #expect(!uses.isEmpty && text.contains("@available(macOS 15") && text.contains("#available(macOS 15"), "\(file) is listed but does not use and guard it")
            }
        }
        for listed in Self.newerThanTargetsFiles.keys {
            #expect(files.contains(listed), "\(listed) is listed but does not exist")
        }
    }

    @Test("The newer-API rule catches each kind, and passes what every target has", arguments: [
        ("final class E: TaskExecutor {", true), ("Task(executorPreference: e) {", true), ("import Synchronization", true),
        ("let stop = Atomic(false)", true), ("let lock = Mutex<Int>(0)", true), ("await withTaskExecutorPreference(e) {", true),
        ("let stop = Locked(false)", false), ("import Foundation", false), ("Task.detached {", false), ("let atomicWrite = true", false),
    ])
    func newerAPIRule(_ line: String, _ caught: Bool) throws {
        #expect(line.contains(try Regex(Self.newerThanTargets)) == caught)
    }

    @Test("The Apple rule catches each kind of framework import, and passes portable ones", arguments: [
        ("import SwiftUI", true), ("@_exported import CryptoKit", true), ("import Security", true), ("public import ImageIO", true),
        ("import UIKit", true), ("import Foundation", false), ("import BuckiaSecurity", false), ("import SecurityKit", false),
    ])
    func appleRule(_ line: String, _ caught: Bool) throws {
        #expect(line.contains(try Regex(Self.appleImport)) == caught)
    }

    @Test("The rules catch each kind of Linux-only line", arguments: [
        "import Glibc", "    import CLinux", "internal import COpenSSL", "@_implementationOnly import CCurl",
        "EVP_DigestInit_ex(context, md, nil)", "_ = SHA256_Update(&c, p, n)", "curl_easy_perform(handle)",
        "descriptor = inotify_init1(0)", "if fdatasync(fd) != 0 {", "syncfs(fd)", "let flags = O_TMPFILE | O_RDWR", "ioctl(fd, FICLONE, source)",
        "send(fd, p, n, Int32(MSG_NOSIGNAL))", "socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)", #"String(contentsOfFile: "/proc/self/io")"#,
    ])
    func rulesCatch(line: String) throws {
        #expect(try !Self.violations(in: line).isEmpty)
    }

    @Test("Portable lines and comments pass", arguments: [
        "import Foundation", "import CZlib", "// import Glibc in a comment", "let digest = SHA256.hash(data: bytes)",
        "fsync(descriptor)", "SystemCalls.dataSync(descriptor)", "HMAC<SHA256>.authenticationCode(for: m, using: k)",
    ])
    func portableLinesPass(line: String) throws {
        #expect(try Self.violations(in: line).isEmpty)
    }
}
