import BuckiaTestSupport
import Foundation
import Testing

/// The docs' Swift snippets are compiled as the targets under Tests/DocSnippets; this keeps
/// those targets equal to the pages, so a snippet can never drift from what the build compiles.
@Suite("Documentation snippets")
struct DocSnippetTests {
    @Test("Every Swift snippet in README.md and Docs/ is a compiled target, exactly as shown")
    func snippetsMatchTheDocs() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let run = try ToolRun.run("python3", [root.appendingPathComponent("Tools/check/doc-snippets").path, "--check"])
        let text = run.output + run.errors
        #expect(run.status == 0, "Tools/check/doc-snippets --check:\n\(text)")
        #expect(text.contains("snippet files match the docs"), "\(text)")
    }
}
