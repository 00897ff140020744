import BuckiaCore
import BuckiaHTTP
import BuckiaSecurity
import BuckiaTestSupport
import Foundation
import Testing

@testable import BuckiaB2

@Suite("B2 restricted keys made from Buckia grants")
struct B2RestrictedKeyTests {
    /// A provider that authenticates with `key` on the emulator's private bucket.
    static func provider(_ key: B2RestrictedKey, _ emulator: B2Emulator) throws -> B2Provider {
        var configuration = emulator.configuration(bucket: "buckia-private", options: SharedB2.smallParts)
        configuration.authConfig = key.authentication
        return B2Provider(settings: try B2Settings.resolve(configuration, environment: [:]), retryPolicy: .none)
    }

    /// Whether `operation` succeeds, or is refused by B2 as unauthorized.
    static func allowed(_ operation: () async throws -> Void) async throws -> Bool {
        do {
            try await operation()
            return true
        } catch let error as BuckiaError where error.code == .unauthorized || error.code == .permissionDenied {
            return false
        }
    }

    @Test("The seed's sync grants become two keys that B2 holds to their prefixes and capabilities")
    func seedGrants() async throws {
        let (master, emulator) = try await B2ProviderTests.fresh()
        defer { emulator.stop() }
        for key in ["u1/a.txt", "u1/inbound/old", "u10/a.txt", "u2/a.txt"] { _ = try await master.uploadData(Data("x".utf8), remotePath: key) }

        let factory = B2RestrictedKeyFactory(provider: master)
        let keys = try await factory.credentials(
            for: [StoragePermissions.readOnly.restrictToPath("u1/"), StoragePermissions.write.restrictToPath("u1/inbound/")], userId: "u1 (alice)",
            expiry: .seconds(3600))
        #expect(keys.count == 2)
        #expect(keys.map(\.capabilities) == [["listBuckets", "readFiles", "listFiles"], ["listBuckets", "writeFiles"]])
        #expect(keys.allSatisfy { !"\($0)".contains($0.applicationKey.exposedValue) })
        let reader = try Self.provider(keys[0], emulator)
        let writer = try Self.provider(keys[1], emulator)

        // Inside: allowed.
        #expect(try await reader.readData(remotePath: "u1/a.txt") == Data("x".utf8))
        #expect(try await reader.listFiles(path: "u1/").map(\.path.rawValue).sorted() == ["u1/a.txt", "u1/inbound/old"])
        _ = try await writer.uploadData(Data("y".utf8), remotePath: "u1/inbound/new")
        // Outside the prefix, or beyond the capabilities: B2 refuses.
        #expect(try await !Self.allowed { _ = try await reader.readData(remotePath: "u10/a.txt") })
        #expect(try await !Self.allowed { _ = try await reader.readData(remotePath: "u2/a.txt") })
        #expect(try await !Self.allowed { _ = try await reader.listFiles(path: "u10/") })
        #expect(try await !Self.allowed { _ = try await reader.uploadData(Data("z".utf8), remotePath: "u1/x") })
        #expect(try await !Self.allowed { try await reader.deleteFile(remotePath: "u1/a.txt") })
        #expect(try await !Self.allowed { _ = try await writer.uploadData(Data("z".utf8), remotePath: "u1/x") })
        #expect(try await !Self.allowed { _ = try await writer.uploadData(Data("z".utf8), remotePath: "u1/inbound-x/y") })
        #expect(try await !Self.allowed { _ = try await writer.readData(remotePath: "u1/inbound/new") })
        #expect(try await master.readData(remotePath: "u1/a.txt") == Data("x".utf8))
        #expect(try await master.stat(remotePath: "u1/x") == nil)

        // Deleted keys stop working.
        try await factory.delete(keys[0])
        #expect(try await !Self.allowed { _ = try await Self.provider(keys[0], emulator).readData(remotePath: "u1/a.txt") })
    }

    @Test("A grant on one object is refused as inexpressible before any key is made; so is an escaping prefix")
    func inexpressible() async throws {
        let (master, emulator) = try await B2ProviderTests.fresh()
        defer { emulator.stop() }
        let factory = B2RestrictedKeyFactory(provider: master)
        let grants: StorageGrants = [
            StoragePermissions.readOnly.restrictToPath("u1/"), StoragePermissions.read.restrictToPath("docs/readme.txt"),
            StoragePermissions.deliver.restrictToPath("u2/inbound/"), StoragePermissions.readOnly.restrictToPath("home/*/public/"),
        ]
        #expect(factory.inexpressible(grants).map(\.grant.prefix) == ["docs/readme.txt", "u2/inbound/", "home/*/public/"])
        let error = await #expect(throws: BuckiaError.self) { try await factory.credentials(for: grants, userId: "u1", expiry: .seconds(60)) }
        #expect(error?.code == .unsupported)
        #expect(error?.message.contains("docs/readme.txt") == true)
        let escaping = await #expect(throws: BuckiaError.self) {
            try await factory.credentials(for: [StoragePermissions.all.restrictToPath("../")], userId: "u1", expiry: .seconds(60))
        }
        #expect(escaping?.code == .invalidPath)
        #expect(try await emulator.stats().count("b2_create_key") == 0)
    }

    @Test("Key names keep to B2's alphabet", arguments: [("u1", "buckia-u1"), ("alice@example.com", "buckia-alice-example-com"), ("é", "buckia--")])
    func keyNames(_ user: String, _ expected: String) {
        #expect(B2RestrictedKeyFactory.keyName(for: user) == expected)
    }
}
