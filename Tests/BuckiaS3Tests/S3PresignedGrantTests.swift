import BuckiaCore
import BuckiaHTTP
import BuckiaSecurity
import BuckiaTestSupport
import Foundation
import Testing

@testable import BuckiaS3

@Suite("S3 presigned URLs from Buckia grants")
struct S3PresignedGrantTests {
    @Test("Object grants become one URL per method that Ceph RGW accepts for that object only", arguments: [S3TestServer.Kind.cephRGW])
    func objectGrants(_ kind: S3TestServer.Kind) async throws {
        let (provider, _, _) = try await makeS3Provider(on: try await S3TestServer.shared(kind))
        _ = try await provider.uploadData(Data("report".utf8), remotePath: "u1/report.pdf")
        _ = try await provider.uploadData(Data("other".utf8), remotePath: "u1/report.pdf2")
        let factory = S3PresignedGrantFactory(provider: provider)
        let grants = try await factory.credentials(
            for: [StorageGrant([.read, .write], prefix: "u1/report.pdf"), StoragePermissions.write.restrictToPath("u1/inbound/new.sqlite")],
            userId: "u1", expiry: .seconds(300))
        #expect(grants.map { "\($0.method.rawValue) \($0.key)" } == ["GET u1/report.pdf", "PUT u1/report.pdf", "PUT u1/inbound/new.sqlite"])
        #expect(grants.allSatisfy { !"\($0)".contains($0.url.exposedValue) })
        let client = HTTPClient(configuration: .init(retryPolicy: .none))
        let get = try #require(URL(string: grants[0].url.exposedValue))
        #expect(try await client.send(HTTPRequest(.get, get)).data == Data("report".utf8))
        let put = try #require(URL(string: grants[2].url.exposedValue))
        _ = try await client.send(HTTPRequest(.put, put, body: .data(Data("diff".utf8))))
        #expect(try await provider.readData(remotePath: "u1/inbound/new.sqlite") == Data("diff".utf8))

        // The GET URL's signature covers its object: pointed at the neighbour, RGW refuses it.
        let neighbour = try #require(URL(string: grants[0].url.exposedValue.replacingOccurrences(of: "report.pdf?", with: "report.pdf2?")))
        #expect(try await client.send(HTTPRequest(.get, neighbour, accepts: .all)).status == 403)
    }

    @Test("Folder, list and delete grants are inexpressible and refused before anything is signed")
    func inexpressible() async throws {
        let (provider, _, _) = try await makeS3Provider(auth: false)
        let factory = S3PresignedGrantFactory(provider: provider)
        let grants: StorageGrants = [
            StoragePermissions.read.restrictToPath("u1/"), StorageGrant([.read, .list], prefix: "u1/a"), StoragePermissions.delete.restrictToPath("u1/b"),
            StoragePermissions.read.restrictToPath("u1/c"), StoragePermissions.deliver.restrictToPath("u2/inbound/"), StoragePermissions.read.restrictToPath("u1/*/d"),
            StorageGrant([.write, .deliver], prefix: "u1/e"),
        ]
        #expect(factory.inexpressible(grants).map(\.grant.prefix) == ["u1/", "u1/a", "u1/b", "u2/inbound/", "u1/*/d"])
        let error = await #expect(throws: BuckiaError.self) { try await factory.credentials(for: grants, userId: "u1", expiry: .seconds(60)) }
        #expect(error?.code == .unsupported)
    }
}
