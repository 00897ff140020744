import BuckiaCore
@testable import BuckiaGateway
import BuckiaLocal
import BuckiaMemory
import BuckiaSecurity
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing

/// What S3 answers for a bucket without versioning, and the smaller answers tools rely on:
/// each case here is one a public S3 compatibility suite or a client's cleanup tripped on.
@Suite("S3 gateway: answers as S3 gives them (versions, owners, bucket listing, refusals)")
struct GatewayS3AnswersTests {
    static func text(_ body: Data) -> String { String(decoding: body, as: UTF8.self) }

    static func values(_ xml: String, _ element: String) -> [String] {
        xml.components(separatedBy: "<\(element)>").dropFirst().compactMap { $0.components(separatedBy: "</\(element)>").first }
    }

    static func put(_ harness: GatewayHarness, _ keys: [String]) async throws {
        for key in keys { try #require(try await harness.send("PUT", key, body: Data(key.utf8)).0 == 200, "PUT \(key)") }
    }

    @Test("A GET answers the object's exact bytes on each side of the size read whole with its status; a range, a HEAD and a matching If-None-Match answer as S3 does",
          arguments: [1, Int(S3Gateway.smallObjectBytes), Int(S3Gateway.smallObjectBytes) + 1])
    func getAroundTheWholeReadLimit(_ size: Int) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("sizes")
        let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try #require(try await harness.send("PUT", "/sizes/object.bin", body: bytes).0 == 200)

        let whole = try await harness.exchange("GET", "/sizes/object.bin")
        #expect(whole.status == 200 && whole.body == bytes && whole.headers["content-length"] == String(size))
        let last = try await harness.exchange("GET", "/sizes/object.bin", headers: ["Range": "bytes=-1"])
        #expect(last.status == 206 && last.body == bytes.suffix(1) && last.headers["content-range"] == "bytes \(size - 1)-\(size - 1)/\(size)")
        let head = try await harness.exchange("HEAD", "/sizes/object.bin")
        #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == String(size))
        let etag = try #require(whole.headers["etag"])
        let unchanged = try await harness.exchange("GET", "/sizes/object.bin", headers: ["If-None-Match": etag])
        #expect(unchanged.status == 304 && unchanged.body.isEmpty)
        let changed = try await harness.exchange("GET", "/sizes/object.bin", headers: ["If-Match": "\"other\""])
        #expect(changed.status == 412)
    }

    /// Counts the status and read requests that reach the backend.
    struct CountingReads: ForwardingStorageProvider {
        let base: any StorageProvider
        let counts = Locked((stats: 0, opens: 0))

        func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
            counts.withLock { $0.stats += 1 }
            return try await base.stat(remotePath: remotePath)
        }

        func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
            counts.withLock { $0.opens += 1 }
            return try await base.openRead(remotePath: remotePath, options: options)
        }
    }

    @Test("Over a backend that is not a local folder, a whole-object GET is one read with no status request before it; a range asks the status first",
          arguments: [100, Int(S3Gateway.smallObjectBytes) + 100])
    func wholeGetOpensOnce(_ size: Int) async throws {
        let backend = CountingReads(base: try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)))
        let harness = try GatewayHarness(provider: backend)
        defer { harness.stop() }
        try await harness.createBucket("reads")
        let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        try #require(try await harness.send("PUT", "/reads/object.bin", body: bytes).0 == 200)

        let before = backend.counts.withLock { $0 }
        let whole = try await harness.exchange("GET", "/reads/object.bin")
        #expect(whole.status == 200 && whole.body == bytes)
        let afterWhole = backend.counts.withLock { $0 }
        #expect(afterWhole.stats == before.stats && afterWhole.opens == before.opens + 1, "\(before) → \(afterWhole)")

        let missing = try await harness.exchange("GET", "/reads/absent.bin")
        #expect(missing.status == 404 && Self.text(missing.body).contains("<Code>NoSuchKey</Code>"))

        let ranged = try await harness.exchange("GET", "/reads/object.bin", headers: ["Range": "bytes=1-2"])
        #expect(ranged.status == 206 && ranged.body == bytes[1...2])
        let afterRange = backend.counts.withLock { $0 }
        #expect(afterRange.stats == afterWhole.stats + 1, "\(afterWhole) → \(afterRange)")
    }

    @Test("GetBucketVersioning: never enabled; ListObjectVersions: every object once, version null, the latest, paged by key")
    func versions() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("ver")
        try await Self.put(harness, ["/ver/a.txt", "/ver/b/c.txt", "/ver/d.txt"])
        let versioning = try await harness.send("GET", "/ver?versioning")
        #expect(versioning.0 == 200 && Self.text(versioning.1).contains("<VersioningConfiguration") && !Self.text(versioning.1).contains("<Status>"))

        let all = Self.text(try await harness.send("GET", "/ver?versions").1)
        #expect(all.contains("<ListVersionsResult"))
        #expect(Self.values(all, "Key") == ["a.txt", "b/c.txt", "d.txt"])
        #expect(Self.values(all, "VersionId") == ["null", "null", "null"] && Self.values(all, "IsLatest") == ["true", "true", "true"])
        #expect(Self.values(all, "ID").count == 3, "each version names its owner")

        let first = Self.text(try await harness.send("GET", "/ver?versions&max-keys=2").1)
        #expect(Self.values(first, "Key") == ["a.txt", "b/c.txt"] && Self.values(first, "IsTruncated") == ["true"])
        #expect(Self.values(first, "NextKeyMarker") == ["b/c.txt"] && Self.values(first, "NextVersionIdMarker") == ["null"])
        let rest = Self.text(try await harness.send("GET", "/ver?versions&key-marker=b%2Fc.txt&version-id-marker=null").1)
        #expect(Self.values(rest, "Key") == ["d.txt"] && Self.values(rest, "IsTruncated") == ["false"])

        let grouped = Self.text(try await harness.send("GET", "/ver?versions&delimiter=%2F").1)
        #expect(Self.values(grouped, "Key") == ["a.txt", "d.txt"] && grouped.contains("<CommonPrefixes><Prefix>b/</Prefix></CommonPrefixes>"))
        #expect(try await harness.send("GET", "/ver?versions&version-id-marker=3").0 == 400)
    }

    @Test("max-keys=0 lists nothing and is not truncated; owners only where S3 gives them")
    func listingDetails() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("list")
        try await Self.put(harness, ["/list/a", "/list/b"])
        for query in ["list-type=2&max-keys=0", "max-keys=0"] {
            let body = Self.text(try await harness.send("GET", "/list?\(query)").1)
            #expect(Self.values(body, "IsTruncated") == ["false"] && Self.values(body, "Key").isEmpty, "\(query): \(body)")
        }
        let plain = Self.text(try await harness.send("GET", "/list?list-type=2").1)
        #expect(!plain.contains("<Owner>"))
        let owned = Self.text(try await harness.send("GET", "/list?list-type=2&fetch-owner=true").1)
        #expect(Self.values(owned, "ID") == [harness.accessKeyId, harness.accessKeyId] || Self.values(owned, "ID").count == 2, "\(owned)")
        #expect(Self.values(Self.text(try await harness.send("GET", "/list").1), "Owner").count == 2, "version 1 names owners")
    }

    @Test("ListBuckets pages with max-buckets and its continuation token; creating one's own bucket again succeeds, as in us-east-1")
    func buckets() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        for name in ["bucket-a", "bucket-b", "bucket-c"] { try await harness.createBucket(name) }
        try await harness.createBucket("bucket-b")
        let first = Self.text(try await harness.send("GET", "/?max-buckets=2").1)
        #expect(Self.values(first, "Name") == ["bucket-a", "bucket-b"])
        let token = try #require(Self.values(first, "ContinuationToken").first)
        let second = Self.text(try await harness.send("GET", "/?max-buckets=2&continuation-token=\(token)").1)
        #expect(Self.values(second, "Name") == ["bucket-c"] && Self.values(second, "ContinuationToken").isEmpty)
        #expect(try await harness.send("GET", "/?max-buckets=0").0 == 400)
    }

    @Test("A copy from a bucket that does not exist is NoSuchBucket; from a missing key, NoSuchKey", arguments: ["/nowhere/a.txt", "/copies/none.txt"])
    func copyFromMissing(_ source: String) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("copies")
        let started = try await harness.send("POST", "/copies/part.bin?uploads")
        let id = try #require(Self.values(Self.text(started.1), "UploadId").first)
        for target in ["/copies/to.txt", "/copies/part.bin?partNumber=1&uploadId=\(id)"] {
            let (status, body) = try await harness.send("PUT", target, headers: ["x-amz-copy-source": source])
            let code = source.hasPrefix("/nowhere") ? "NoSuchBucket" : "NoSuchKey"
            #expect(status == 404 && Self.text(body).contains("<Code>\(code)</Code>"), "\(target) from \(source): \(Self.text(body))")
        }
    }

    @Test("Buckets live in the backend: a second gateway over the same folder sees one made by the first, with its creation date; a deletion through it reaches the first")
    func bucketsInTheBackend() async throws {
        let created = Date(timeIntervalSince1970: (Date().timeIntervalSince1970).rounded(.down))
        let now = Locked(created)
        let first = try GatewayHarness(configure: { options in options.clock = { now.withLock { $0 } } })
        defer { first.stop() }
        let root = try #require(first.root)
        let second = try GatewayHarness(provider: try LocalProvider(root: root))
        defer { second.stop() }
        try await first.createBucket("shared")
        #expect(try await second.send("HEAD", "/shared").0 == 200, "an empty bucket made through another gateway")
        func creationDates(_ harness: GatewayHarness) async throws -> [String] {
            let listing = Self.text(try await harness.send("GET", "/").1)
            return Self.values(listing, "Bucket").filter { $0.contains("<Name>shared</Name>") }.flatMap { Self.values($0, "CreationDate") }
        }
        let expected = S3Gateway.isoDate(created)
        #expect(try await creationDates(second) == [expected])
        // Creating it again, an hour later, keeps its date.
        now.withLock { $0 = created.addingTimeInterval(3_600) }
        try await first.createBucket("shared")
        #expect(try await creationDates(second) == [expected])
        // The gateway's records are beside the buckets, never one of them.
        #expect(!Self.values(Self.text(try await second.send("GET", "/").1), "Name").contains(S3Gateway.reservedFolder))
        for target in ["/.buckia-s3/buckets/shared", "/.BUCKIA-S3?list-type=2"] {
            let (status, body) = try await second.send("GET", target)
            #expect(status == 400 && Self.text(body).contains("InvalidBucketName"), "\(target): \(Self.text(body))")
        }
        // Deleted through the second, it is gone for the first once its belief has lapsed.
        #expect(try await second.send("DELETE", "/shared").0 == 204)
        #expect(try await second.send("HEAD", "/shared").0 == 404)
        now.withLock { $0 = $0.addingTimeInterval(S3Gateway.bucketBelief + 1) }
        #expect(try await first.send("HEAD", "/shared").0 == 404)
    }

    @Test("DeleteBucket with an unfinished multipart upload deletes the bucket and the upload, as AWS does")
    func deleteWithUploads() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("gone")
        let id = try await GatewayMultipartTests.start(harness, "/gone/big.bin")
        try #require(try await GatewayMultipartTests.part(harness, "/gone/big.bin", id, 1, Data(repeating: 1, count: 1024)) != nil)
        let deleted = try await harness.send("DELETE", "/gone")
        #expect(deleted.0 == 204, "\(Self.text(deleted.1))")
        #expect(try await harness.send("HEAD", "/gone").0 == 404)
        try await harness.createBucket("gone")
        #expect(Self.values(Self.text(try await harness.send("GET", "/gone?uploads").1), "UploadId").isEmpty)
        #expect(try await harness.send("GET", "/gone/big.bin?uploadId=\(id)").0 == 404)
    }

    @Test("A missing bucket is NoSuchBucket to a signed request without a grant in it, and to an anonymous one")
    func noSuchBucket() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("there")
        let credentials = try harness.credentials(grants: [StorageGrant([.read, .list], prefix: "there/alice/")]).awsCredentials
        for target in ["/missing", "/missing/a.txt"] {
            let signed = try await harness.send("GET", target, credentials: credentials)
            #expect(signed.0 == 404 && Self.text(signed.1).contains("NoSuchBucket"), "\(target): \(Self.text(signed.1))")
            let anonymous = try await RawHTTP.exchange(port: UInt16(harness.server.port), method: "GET", target: target, headers: [])
            #expect(anonymous.status == 404 && Self.text(anonymous.body).contains("NoSuchBucket"), "\(target): \(Self.text(anonymous.body))")
        }
        // An existing bucket stays AccessDenied to both.
        #expect(try await harness.send("GET", "/there/b.txt", credentials: credentials).0 == 403)
        #expect(try await RawHTTP.exchange(port: UInt16(harness.server.port), method: "GET", target: "/there/b.txt", headers: []).status == 403)
    }

    @Test("ACLs, grants and storage classes the gateway cannot keep are NotImplemented, never a 200 that did nothing", arguments: [
        ("PUT", "/acl/a.txt", ["x-amz-acl": "public-read"], 501), ("PUT", "/acl/b.txt", ["x-amz-acl": "private"], 200),
        ("PUT", "/acl/c.txt", ["x-amz-grant-read": "id=someone"], 501), ("PUT", "/acl/d.txt", ["x-amz-storage-class": "GLACIER"], 501),
        ("PUT", "/acl/e.txt", ["x-amz-storage-class": "STANDARD"], 200), ("POST", "/acl/f.txt?uploads", ["x-amz-acl": "public-read-write"], 501),
        ("PUT", "/acl2", ["x-amz-acl": "public-read"], 501), ("PUT", "/acl3", ["x-amz-acl": "private"], 200),
    ] as [(String, String, [String: String], Int)])
    func unsupportedAccessControl(_ method: String, _ target: String, _ headers: [String: String], _ status: Int) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("acl")
        let (answer, body) = try await harness.send(method, target, body: Data(), headers: headers)
        #expect(answer == status, "\(Self.text(body))")
        if status == 501 {
            #expect(Self.text(body).contains("NotImplemented"))
            if method == "PUT", target.dropFirst().contains("/") { #expect(try await harness.send("HEAD", target).0 == 404, "nothing stored") }
        }
    }

    @Test("Over a folder, a key under an object's name (and an object over a folder of keys) is a KeyConflict that says so, not a 412")
    func keyConflicts() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("tree")
        try await Self.put(harness, ["/tree/a/b", "/tree/x/y/z"])
        for target in ["/tree/a/b/c", "/tree/x/y"] {
            let (status, body) = try await harness.send("PUT", target, body: Data("c".utf8))
            #expect(status == 409 && Self.text(body).contains("KeyConflict") && Self.text(body).contains("cannot hold both"), "\(target): \(Self.text(body))")
        }
    }

    @Test("Presigned URLs: an expiry past a week, negative or not a number is refused as S3 refuses it (403); 0 seconds has expired", arguments: [
        ("604801", "less than a week"), ("-7", "non-negative"), ("soon", "should be a number"), ("0", "Request has expired"),
    ])
    func presignedExpiry(_ expires: String, _ message: String) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("signed")
        try await Self.put(harness, ["/signed/a.txt"])
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyId: harness.accessKeyId, secretAccessKey: harness.secretAccessKey), region: "us-east-1", service: "s3")
        let url = try signer.presignedURL(method: "GET", url: try #require(URL(string: harness.endpoint.absoluteString + "/signed/a.txt")), expires: .seconds(600), date: Date())
        let query = try #require(url.absoluteString.split(separator: "?", maxSplits: 1).last.map(String.init))
        let valid = try await RawHTTP.exchange(port: UInt16(harness.server.port), method: "GET", target: "/signed/a.txt?" + query, headers: [])
        #expect(valid.status == 200, "\(Self.text(valid.body))")
        let target = "/signed/a.txt?" + query.replacingOccurrences(of: "X-Amz-Expires=600", with: "X-Amz-Expires=\(expires)")
        let answer = try await RawHTTP.exchange(port: UInt16(harness.server.port), method: "GET", target: target, headers: [])
        #expect(answer.status == 403 && Self.text(answer.body).contains(message), "\(Self.text(answer.body))")
    }

    @Test("A folder marker over a folder is a folder: a PUT of no bytes makes it, HEAD and GET find it, DELETE removes it when empty")
    func folderMarkers() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("marks")
        let root = try #require(harness.root)
        let made = try await harness.exchange("PUT", "/marks/photos/", headers: ["Content-Type": "application/x-directory"])
        #expect(made.status == 200 && made.headers["etag"] == "\"d41d8cd98f00b204e9800998ecf8427e\"", "\(Self.text(made.body))")
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("marks/photos").path, isDirectory: &isFolder) && isFolder.boolValue)
        let head = try await harness.exchange("HEAD", "/marks/photos/")
        #expect(head.status == 200 && head.headers["content-length"] == "0" && head.headers["etag"] == made.headers["etag"] && head.headers["last-modified"] != nil)
        let get = try await harness.exchange("GET", "/marks/photos/")
        #expect(get.status == 200 && get.body.isEmpty)
        #expect(try await harness.send("HEAD", "/marks/videos/").0 == 404)
        // A marker holds no bytes, and keeps nothing a folder cannot.
        let full = try await harness.send("PUT", "/marks/full/", body: Data("x".utf8))
        #expect(full.0 == 400 && Self.text(full.1).contains("holds no bytes"), "\(Self.text(full.1))")
        #expect(try await harness.send("PUT", "/marks/meta/", headers: ["x-amz-meta-colour": "red"]).0 == 501)
        #expect(try await harness.send("HEAD", "/marks/full/").0 == 404)
        #expect(try await harness.send("HEAD", "/marks/meta/").0 == 404)
        // An object under it keeps the folder when the marker is deleted; an empty folder goes.
        #expect(try await harness.send("PUT", "/marks/photos/a.jpg", body: Data("a".utf8)).0 == 200)
        #expect(try await harness.send("DELETE", "/marks/photos/").0 == 204)
        #expect(try await harness.send("GET", "/marks/photos/a.jpg").1 == Data("a".utf8))
        #expect(try await harness.send("DELETE", "/marks/photos/a.jpg").0 == 204)
        #expect(try await harness.send("PUT", "/marks/empty/").0 == 200)
        #expect(try await harness.send("DELETE", "/marks/empty/").0 == 204)
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("marks/empty").path))
        // A marker where an object has the folder's name is a KeyConflict, as any key that would need both.
        #expect(try await harness.send("PUT", "/marks/doc", body: Data("d".utf8)).0 == 200)
        let conflict = try await harness.send("PUT", "/marks/doc/")
        #expect(conflict.0 == 409 && Self.text(conflict.1).contains("KeyConflict"), "\(Self.text(conflict.1))")
    }

    @Test("Over a backend without folders a marker is refused with an error that says so, not AccessDenied")
    func folderMarkersWithoutFolders() async throws {
        let harness = try GatewayHarness(provider: try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)))
        defer { harness.stop() }
        try await harness.createBucket("marks")
        let marker = try await harness.send("PUT", "/marks/photos/", body: Data())
        #expect(marker.0 == 400 && Self.text(marker.1).contains("InvalidArgument") && Self.text(marker.1).contains("has no folders"), "\(Self.text(marker.1))")
        #expect(try await harness.send("HEAD", "/marks/photos/").0 == 404)
        #expect(try await harness.send("DELETE", "/marks/photos/").0 == 204)
        // A marker has an empty last segment, which the grants' screen calls unsafe: it needs a
        // grant on the whole bucket, as every such key does, and is refused under one on part of it.
        let scoped = try harness.credentials(grants: [StorageGrant(.all, prefix: "marks/alice/")]).awsCredentials
        #expect(try await harness.send("PUT", "/marks/alice/photos/", credentials: scoped).0 == 403)
        #expect(try await harness.send("PUT", "/marks/bob/photos/", credentials: scoped).0 == 403)
        let whole = try harness.credentials(grants: [StorageGrant(.all, prefix: "marks/")]).awsCredentials
        #expect(try await harness.send("PUT", "/marks/alice/photos/", credentials: whole).0 == 400)
    }

    @Test("Under a grant on the whole bucket, keys S3 accepts are accepted: a space, %25, a segment ending in a dot; prefixes no key has list nothing")
    func keysS3Accepts() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("keys")
        // Path-encoded as an S3 client sends them: " " is %20, a literal "%25" is %2525.
        for (target, key) in [("/keys/%20", " "), ("/keys/a%2525b", "a%25b"), ("/keys/dots./x", "dots./x"), ("/keys/tab%09name", "tab\tname")] {
            let put = try await harness.send("PUT", target, body: Data(key.utf8))
            #expect(put.0 == 200, "\(key.debugDescription): \(Self.text(put.1))")
            let get = try await harness.send("GET", target)
            #expect(get.0 == 200 && get.1 == Data(key.utf8), "\(key.debugDescription)")
        }
        for prefix in ["%2F", "%0A"] {
            let (status, body) = try await harness.send("GET", "/keys?list-type=2&prefix=\(prefix)")
            #expect(status == 200 && Self.values(Self.text(body), "Key").isEmpty, "prefix \(prefix): \(Self.text(body))")
        }

        // A grant on part of the bucket keeps the screen: such spellings are what could reach
        // past its edge on a backend that reads them another way.
        let scoped = try harness.credentials(grants: [StorageGrant(.all, prefix: "keys/alice/")]).awsCredentials
        #expect(try await harness.send("PUT", "/keys/alice/a%2525b", body: Data("x".utf8), credentials: scoped).0 == 403)
        #expect(try await harness.send("PUT", "/keys/alice/ok", body: Data("x".utf8), credentials: scoped).0 == 200)
    }
}
