import Buckia
import Foundation
import Testing

/// The README's sync snippet, compiled here exactly as the README shows it.
func readmeSyncSnippet() async throws {
    let client = try await BuckiaClient(configuration: BuckiaConfiguration(provider: .local, options: ["root": "/srv/buckia"]))
    let options = SyncOptions(localPath: URL(fileURLWithPath: "Photos"), remotePath: "photos", mode: .twoWay)
    let result = try await client.sync(options: options)
    print("uploaded \(result.filesUploaded), downloaded \(result.filesDownloaded), failed \(result.failures.count)")
}

@Suite("README snippets")
struct ReadmeSnippetTests {
    @Test("The README shows the sync snippet exactly as it is compiled")
    func syncSnippet() throws {
        let here = URL(fileURLWithPath: #filePath)
        let source = try String(contentsOf: here, encoding: .utf8)
        let readme = try String(
            contentsOf: here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("README.md"),
            encoding: .utf8)
        let start = try #require(source.range(of: "func readmeSyncSnippet() async throws {\n"))
        let end = try #require(source.range(of: "\n}\n", range: start.upperBound..<source.endIndex))
        let body = source[start.upperBound..<end.lowerBound].split(separator: "\n").map { $0.dropFirst(4) }.joined(separator: "\n")
        #expect(readme.contains("```swift\n" + body + "\n```"), "README.md must show readmeSyncSnippet's body verbatim")
    }
}
