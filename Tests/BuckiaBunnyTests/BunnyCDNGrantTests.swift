import BuckiaCore
import BuckiaSecurity
import Foundation
import Testing

@testable import BuckiaBunny

@Suite("Bunny CDN tokens from Buckia grants")
struct BunnyCDNGrantTests {
    static func provider(now: Date) throws -> BunnyProvider {
        let configuration = BuckiaConfiguration(
            provider: .bunny, bucketName: "zone", authConfig: .providerSpecific(type: .bunny, credentials: ["accessKey": "pw", "tokenKey": "zone-token-key"]),
            options: ["pullZoneURL": "https://zone.b-cdn.net"])
        return try BunnyProvider(settings: BunnySettings.resolve(configuration, environment: [:]), now: { now })
    }

    @Test("A folder read grant is a directory token for that folder only; an object grant signs that object's URL")
    func readGrants() async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let provider = try Self.provider(now: now)
        let factory = BunnyCDNGrantFactory(provider: provider)
        let tokens = try await factory.credentials(
            for: [StoragePermissions.read.restrictToPath("u1/"), StoragePermissions.read.restrictToPath("docs/readme.txt")], userId: "u1", expiry: .seconds(600))
        #expect(tokens.map(\.expiresAt) == [now.addingTimeInterval(600), now.addingTimeInterval(600)])
        let checker = BunnyTokenFactory(securityKey: "zone-token-key")
        let inside = try #require(URL(string: "https://zone.b-cdn.net/\(tokens[0].token.exposedValue)/u1/photo.jpg"))
        _ = try checker.validate(inside, now: now)
        let sibling = try #require(URL(string: "https://zone.b-cdn.net/\(tokens[0].token.exposedValue)/u10/photo.jpg"))
        #expect(throws: BunnyTokenRefusal.self) { try checker.validate(sibling, now: now) }
        let object = try #require(URL(string: tokens[1].token.exposedValue))
        _ = try checker.validate(object, now: now)
        #expect(throws: BunnyTokenRefusal.self) { try checker.validate(object, now: now.addingTimeInterval(601)) }
    }

    @Test("Writing, deleting and listing are inexpressible on a CDN")
    func inexpressible() throws {
        let factory = BunnyCDNGrantFactory(provider: try Self.provider(now: Date()))
        let grants: StorageGrants = [
            StoragePermissions.readOnly.restrictToPath("u1/"), StoragePermissions.write.restrictToPath("u1/inbound/"), StoragePermissions.read.restrictToPath("u1/"),
            StoragePermissions.deliver.restrictToPath("u2/inbound/"), StoragePermissions.read.restrictToPath("home/*/public/"),
        ]
        #expect(factory.inexpressible(grants).map(\.grant) == [grants.grants[0], grants.grants[1], grants.grants[3], grants.grants[4]])
    }
}

@Suite("TokenManager.generateBunnyToken")
struct TokenManagerBunnyTests {
    @Test("Signs with the key saved in the store, and says where the key must be when it is missing")
    func generate() throws {
        let manager = TokenManager(store: InMemorySecretStore())
        let url = try #require(URL(string: "https://zone.b-cdn.net/videos/intro.mp4"))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect((#expect(throws: BuckiaError.self) { try manager.generateBunnyToken(for: url, expiry: .seconds(60), now: now) })?.code == .notFound)
        try manager.saveToken("zone-token-key", for: TokenManager.bunnyTokenKeyContext)
        let signed = try manager.generateBunnyToken(for: url, expiry: .seconds(60), countries: ["CA"], now: now)
        let token = try BunnyTokenFactory(securityKey: "zone-token-key").validate(signed, now: now, country: "CA")
        #expect(token.expires == now.addingTimeInterval(60))
        #expect(throws: BunnyTokenRefusal.self) { try BunnyTokenFactory(securityKey: "zone-token-key").validate(signed, now: now, country: "US") }
        #expect(throws: BunnyTokenRefusal.self) { try BunnyTokenFactory(securityKey: "another").validate(signed, now: now, country: "CA") }
    }
}
