import BuckiaCore
import Foundation
import Testing

/// A JSON document that must be rejected, and what the error must name.
struct BadConfiguration: Sendable, CustomTestStringConvertible {
    let name: String
    let json: String
    /// The path the error carries, or nil when the problem has none (malformed JSON).
    let path: String?
    /// Text the message must contain.
    let mentions: String

    var testDescription: String { name }
}

struct BuckiaConfigurationTests {
    static let full = BuckiaConfiguration(
        provider: .s3,
        bucketName: "photos",
        authConfig: .awsSignature(accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG", sessionToken: "tok"),
        maxConcurrentOperations: 16,
        deleteOrphanedFiles: true,
        includePatterns: ["*.jpg", "raw/**"],
        excludePatterns: ["**/.DS_Store"],
        folderStructure: FolderStructureConfiguration(location: .documents, rootPath: "/srv/buckia", userId: "u1"),
        options: ["region": "eu-west-1", "endpoint": "https://s3.example.com"])

    @Test("A configuration survives a JSON round trip")
    func roundTrip() throws {
        let json = try Self.full.encodedJSON()
        #expect(try BuckiaConfiguration.decode(from: json) == Self.full)
        // Sorted keys make the encoding stable.
        #expect(try Self.full.encodedJSON() == json)
    }

    @Test("Minimal JSON gets the defaults")
    func defaults() throws {
        let configuration = try BuckiaConfiguration.decode(from: Data(#"{"provider": "memory"}"#.utf8))
        #expect(configuration == BuckiaConfiguration(provider: .memory))
        #expect(configuration.bucketName == "")
        #expect(configuration.authConfig == .none)
        #expect(configuration.maxConcurrentOperations == 4)
        #expect(!configuration.deleteOrphanedFiles)
        #expect(configuration.includePatterns.isEmpty && configuration.excludePatterns.isEmpty)
        #expect(configuration.folderStructure == FolderStructureConfiguration())
        #expect(configuration.folderStructure.location == .applicationSupport)
        #expect(configuration.options.isEmpty)
    }

    @Test("Null optional settings read as their defaults")
    func nulls() throws {
        let json = #"{"provider": "s3", "bucketName": null, "options": null, "authConfig": null}"#
        #expect(try BuckiaConfiguration.decode(from: Data(json.utf8)) == BuckiaConfiguration(provider: .s3))
    }

    static let bad: [BadConfiguration] = [
        BadConfiguration(name: "unknown top-level key", json: #"{"provider": "s3", "bucket": "x"}"#,
                         path: "bucket", mentions: "bucket"),
        BadConfiguration(name: "unknown key in authConfig",
                         json: #"{"provider": "s3", "authConfig": {"method": "apiKey", "credential": {"apiKey": "k"}}}"#,
                         path: "authConfig.credential", mentions: "authConfig.credential"),
        BadConfiguration(name: "unknown key in folderStructure",
                         json: #"{"provider": "s3", "folderStructure": {"root": "/x"}}"#,
                         path: "folderStructure.root", mentions: "folderStructure.root"),
        BadConfiguration(name: "missing provider", json: #"{"bucketName": "x"}"#, path: "provider", mentions: "provider"),
        BadConfiguration(name: "null provider", json: #"{"provider": null}"#, path: "provider", mentions: "provider"),
        BadConfiguration(name: "number as string", json: #"{"provider": "s3", "maxConcurrentOperations": "four"}"#,
                         path: "maxConcurrentOperations", mentions: "maxConcurrentOperations"),
        BadConfiguration(name: "string as list", json: #"{"provider": "s3", "includePatterns": "*.jpg"}"#,
                         path: "includePatterns", mentions: "includePatterns"),
        BadConfiguration(name: "wrong element type", json: #"{"provider": "s3", "excludePatterns": ["a", 5]}"#,
                         path: "excludePatterns[1]", mentions: "excludePatterns[1]"),
        BadConfiguration(name: "wrong option type", json: #"{"provider": "s3", "options": {"region": 5}}"#,
                         path: "options.region", mentions: "options.region"),
        BadConfiguration(name: "unknown auth method", json: #"{"provider": "s3", "authConfig": {"method": "magic"}}"#,
                         path: "authConfig.method", mentions: "authConfig.method"),
        BadConfiguration(name: "missing auth method", json: #"{"provider": "s3", "authConfig": {}}"#,
                         path: "authConfig.method", mentions: "authConfig.method"),
        BadConfiguration(name: "credential not a string",
                         json: #"{"provider": "s3", "authConfig": {"method": "apiKey", "credentials": {"apiKey": 1}}}"#,
                         path: "authConfig.credentials.apiKey", mentions: "authConfig.credentials.apiKey"),
        BadConfiguration(name: "authConfig not an object", json: #"{"provider": "s3", "authConfig": "apiKey"}"#,
                         path: "authConfig", mentions: "authConfig"),
        BadConfiguration(name: "malformed JSON", json: #"{"provider": "s3","#, path: nil, mentions: "JSON"),
        BadConfiguration(name: "not an object", json: "[1, 2]", path: nil, mentions: "must be a JSON object"),
        BadConfiguration(name: "a bare number", json: "1.5", path: nil, mentions: "must be a JSON object"),
        BadConfiguration(name: "a key given twice", json: #"{"provider": "local", "options": {"root": "/a", "root": "/b"}}"#, path: "options.root", mentions: "given twice"),
        BadConfiguration(
            name: "a key given twice, once escaped", json: #"{"provider": "local", "options": {"root": "/a", "r\u006fot": "/b"}}"#, path: "options.root",
            mentions: "given twice"),
        BadConfiguration(name: "zero concurrency", json: #"{"provider": "s3", "maxConcurrentOperations": 0}"#,
                         path: "maxConcurrentOperations", mentions: "maxConcurrentOperations"),
        BadConfiguration(name: "too much concurrency", json: #"{"provider": "s3", "maxConcurrentOperations": 1025}"#,
                         path: "maxConcurrentOperations", mentions: "1024"),
        BadConfiguration(name: "bad include glob", json: #"{"provider": "s3", "includePatterns": ["[abc"]}"#,
                         path: "includePatterns[0]", mentions: "[abc"),
        BadConfiguration(name: "bad exclude glob", json: #"{"provider": "s3", "excludePatterns": ["*", "{a,b"]}"#,
                         path: "excludePatterns[1]", mentions: "{a,b"),
    ]

    @Test("Bad JSON is invalid configuration naming where", arguments: bad)
    func rejects(_ row: BadConfiguration) {
        let error = #expect(throws: BuckiaError.self) { try BuckiaConfiguration.decode(from: Data(row.json.utf8)) }
        #expect(error?.code == .invalidConfiguration)
        if let path = row.path { #expect(error?.path == path) }
        #expect(error?.message.contains(row.mentions) == true, "\(error?.message ?? "no error")")
    }

    @Test("Concurrency limits are inclusive", arguments: [(0, false), (1, true), (1024, true), (1025, false), (-1, false)])
    func concurrencyBounds(value: Int, valid: Bool) {
        let configuration = BuckiaConfiguration(provider: .memory, maxConcurrentOperations: value)
        if valid {
            #expect(throws: Never.self) { try configuration.validate() }
        } else {
            let error = #expect(throws: BuckiaError.self) { try configuration.validate() }
            #expect(error?.path == "maxConcurrentOperations")
        }
    }

    @Test("The compiled path filter follows the patterns")
    func pathFilter() throws {
        let filter = try Self.full.pathFilter()
        #expect(filter.selects("a/b.jpg"))
        #expect(filter.selects("raw/x.cr2"))
        #expect(!filter.selects("a/b.png"))
        #expect(!filter.selects("raw/.DS_Store"))
    }

    @Test("A required option names what is missing")
    func requiredOption() throws {
        #expect(try Self.full.requireOption("region") == "eu-west-1")
        let option = #expect(throws: BuckiaError.self) { try Self.full.requireOption("bucketRegion") }
        #expect(option?.code == .invalidConfiguration)
        #expect(option?.path == "options.bucketRegion")
    }
}
