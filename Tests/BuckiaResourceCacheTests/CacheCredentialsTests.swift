import BuckiaCore
import BuckiaHTTP
import BuckiaResourceCache
import BuckiaTestSupport
import Foundation
import Testing

/// The cache is the user's alone and never holds a credential (issue 47, item 11).
@Suite("Resource cache: no credentials kept, private folders")
struct CacheCredentialsTests {
    @Test("A URL's user name and password name no entry: the location's text is the URL without them")
    func identifiersWithoutCredentials() throws {
        let plain = try CacheFixture.url("https://example.com/a.png")
        for text in ["https://user:hunter2@example.com/a.png", "https://user@example.com/a.png", "https://:hunter2@example.com/a.png"] {
            let location = try CacheFixture.url(text)
            #expect(location.holdsCredentials)
            #expect(location.text == "https://example.com/a.png")
            #expect(try MD5IdentifierProvider().identifier(for: location) == MD5IdentifierProvider().identifier(for: plain))
        }
        #expect(!plain.holdsCredentials)
    }

    @Test("The downloader refuses a URL with credentials before any request, naming it without the password")
    func downloaderRefuses() async throws {
        let fixture = try CacheFixture()
        let downloader = ResourceDownloader(cache: fixture.cache, client: HTTPClient())
        // Port 9 (discard): were a request made, it would fail to connect, not be refused so.
        let error = await #expect(throws: BuckiaError.self) { try await downloader.fetch(try CacheFixture.url("http://user:hunter2@127.0.0.1:9/x")) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error.map { !"\($0)".contains("hunter2") } == true)
        #expect(try fixture.cache.statistics().entries == 0)
    }

    @Test("The cache's folders are created 0700 and its index 0600")
    func privateModes() throws {
        let fixture = try CacheFixture()
        func mode(_ url: URL) throws -> Int {
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            return try #require(attributes[.posixPermissions] as? Int)
        }
        #expect(try mode(fixture.folder) == 0o700)
        #expect(try mode(fixture.folder.appendingPathComponent(".buckia-index.sqlite")) == 0o600)
        #expect(try mode(fixture.folder.appendingPathComponent(".buckia-tmp")) == 0o700)
        #expect(try mode(fixture.folder.appendingPathComponent(".buckia-locks")) == 0o700)
    }

    @Test("A file or device in the cache folder's place is refused, naming what it is", arguments: ["/dev/null", "file"])
    func notAFolder(_ name: String) throws {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-cache-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: parent) }
        var folder = URL(fileURLWithPath: name)
        if name == "file" {
            folder = parent.appendingPathComponent("file")
            try Data("x".utf8).write(to: folder)
        }
        let error = try #require(throws: BuckiaError.self) { try ResourceCache(folder: folder) }
        #expect(error.code == .invalidPath)
        #expect(error.message.contains(name == "file" ? "is a regular file" : "is a character device"))
    }
}
