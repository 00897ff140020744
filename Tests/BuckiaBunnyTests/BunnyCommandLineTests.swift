import BuckiaBunny
import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// `buckia url` signing Bunny CDN URLs and `buckia token verify` checking them, as a user runs them.
@Suite("buckia url and token on Bunny remotes")
struct BunnyCommandLineTests {
    static func buckia(_ arguments: [String], extra: [String: String] = [:]) throws -> ToolRun.Result {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-bunny-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let environment = [
            "HOME": home.path, "PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
            "BUCKIA_REMOTE_MEDIA_PROVIDER": "bunny", "BUCKIA_REMOTE_MEDIA_BUCKET": "media-zone",
            "BUCKIA_REMOTE_MEDIA_CREDENTIAL_ACCESS_KEY": "zone-password", "BUCKIA_REMOTE_MEDIA_CREDENTIAL_TOKEN_KEY": "cdn-token-key",
            "BUCKIA_REMOTE_MEDIA_PULL_ZONE_URL": "https://media.b-cdn.net",
        ].merging(extra) { $1 }
        return try ToolRun.run(path: executable, arguments, exactEnvironment: environment, limit: .seconds(60))
    }

    @Test("buckia url signs a CDN URL with the restrictions asked for, and buckia token verify accepts it", arguments: BunnyTokenScheme.allCases)
    func signAndVerify(_ scheme: BunnyTokenScheme) throws {
        var arguments = ["url", "media:videos/intro/playlist.m3u8", "--expires", "10m", "--scheme", scheme.rawValue, "--ip", "1.2.3.4"]
        if scheme != .basic { arguments += ["--countries", "CA,US", "--countries-blocked", "RU", "--token-path", "/videos/", "--path-form"] }
        let signed = try Self.buckia(arguments)
        #expect(signed.status == 0, "\(signed.errors)")
        let text = signed.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let url = try #require(URL(string: text), "\(text)")
        #expect(text.hasPrefix(scheme == .basic ? "https://media.b-cdn.net/videos/intro/playlist.m3u8?token=" : "https://media.b-cdn.net/bcdn_token="), "\(text)")
        let token = try BunnyTokenFactory(securityKey: "cdn-token-key").validate(url, now: Date(), ip: "1.2.3.4", country: scheme == .basic ? nil : "CA")
        #expect(token.scheme == scheme)
        #expect(abs(token.expires.timeIntervalSinceNow - 600) < 120)

        let verified = try Self.buckia(["token", "verify", text, "--remote", "media", "--ip", "1.2.3.4"])
        #expect(verified.status == 0 && verified.output.hasPrefix("valid: \(scheme) token"), "\(verified.output) \(verified.errors)")
        let elsewhere = try Self.buckia(["token", "verify", text, "--remote", "media", "--ip", "9.9.9.9"])
        #expect(elsewhere.status == 1 && elsewhere.output.contains("invalid: the signature does not match"), "\(elsewhere.output)")
        let later = try Self.buckia(["token", "verify", text, "--ip", "1.2.3.4", "--at", "4000000000"], extra: ["BUNNY_TOKEN_KEY": "cdn-token-key"])
        #expect(later.status == 1 && later.output.contains("invalid: expired"), "\(later.output)")
        if scheme != .basic {
            let blocked = try Self.buckia(["token", "verify", text, "--remote", "media", "--ip", "1.2.3.4", "--country", "RU"])
            #expect(blocked.status == 1 && blocked.output.contains("RU"), "\(blocked.output)")
        }
    }

    @Test("A tampered URL is refused, and the secrets never print")
    func tampered() throws {
        let signed = try Self.buckia(["url", "media:a.mp4", "--expires", "1h"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let tampered = signed.replacingOccurrences(of: "/a.mp4", with: "/b.mp4")
        let result = try Self.buckia(["token", "verify", tampered, "--remote", "media"])
        #expect(result.status == 1 && result.output.contains("invalid: the signature does not match"))
        for run in [result, try Self.buckia(["url", "media:a.mp4", "--verbose"])] {
            #expect(!(run.output + run.errors).contains("cdn-token-key") && !(run.output + run.errors).contains("zone-password"))
        }
    }

    @Test("CDN options on a remote that is not Bunny are a usage error, and token verify refuses such a remote")
    func notBunny() throws {
        let result = try Self.buckia(["url", "default:a.txt", "--countries", "CA"])
        #expect(result.status == 2, "\(result.errors)")
        let verify = try Self.buckia(["token", "verify", "https://media.b-cdn.net/a.mp4?token=x&expires=1", "--remote", "default"])
        #expect(verify.status != 0 && verify.errors.contains("is not a Bunny remote"), "\(verify.status) \(verify.errors)")
    }

    @Test("sync pushes and pulls a tree through Bunny, and a no-op resync makes no per-file request")
    func syncTree() async throws {
        let emulator = try await BunnyEmulator.start()
        defer { emulator.stop() }
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-bunny-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let tree = home.appendingPathComponent("tree")
        var files: [String: Data] = [:]
        for index in 0..<40 {
            let path = "folder-\(index % 5)/sub-\(index % 2)/file \(index).txt"
            files[path] = Data("content \(index)\n".utf8)
            try FileManager.default.createDirectory(at: tree.appendingPathComponent(path).deletingLastPathComponent(), withIntermediateDirectories: true)
            try files[path]?.write(to: tree.appendingPathComponent(path))
        }
        let extra = [
            "BUCKIA_REMOTE_MEDIA_ENDPOINT": emulator.endpoint.absoluteString, "BUCKIA_REMOTE_MEDIA_BUCKET": emulator.zone,
            "BUCKIA_REMOTE_MEDIA_CREDENTIAL_ACCESS_KEY": emulator.password, "XDG_DATA_HOME": home.appendingPathComponent("data").path,
        ]
        func sync(_ arguments: [String]) throws {
            let run = try ToolRun.run(
                path: URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia"), ["sync"] + arguments,
                exactEnvironment: [
                    "HOME": home.path, "PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
                    "BUCKIA_REMOTE_MEDIA_PROVIDER": "bunny",
                ].merging(extra) { $1 }, limit: .seconds(120))
            #expect(run.status == 0, "sync \(arguments): \(run.output) \(run.errors)")
        }
        func onlyListings(_ what: String) async throws {
            let stats = try await emulator.stats()
            #expect(stats.total == stats.count("list") && stats.count("list") > 0, "\(what) made per-file requests: \(stats.requests)")
        }
        try sync([tree.path, "media:tree"])
        #expect(try await emulator.stats().count("put") == 40)
        try await emulator.resetStats()
        try sync([tree.path, "media:tree"])
        try await onlyListings("a no-op push resync")
        let pulled = home.appendingPathComponent("pulled")
        try sync(["media:tree", pulled.path])
        for (path, data) in files { #expect(try Data(contentsOf: pulled.appendingPathComponent(path)) == data, "\(path)") }
        try await emulator.resetStats()
        try sync(["media:tree", pulled.path])
        try await onlyListings("a no-op pull resync")
    }
}
