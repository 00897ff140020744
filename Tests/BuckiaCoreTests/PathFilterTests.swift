import BuckiaCore
import Testing

struct PathFilterTests {
    @Test(
        "Includes select, excludes win, empty includes select everything",
        arguments: [
            ([], [], "any/path.bin", true),
            (["*.jpg"], [], "a/b.jpg", true),
            (["*.jpg"], [], "a/b.png", false),
            (["*.jpg", "*.png"], [], "a/b.png", true),
            (["*.jpg"], ["tmp/**"], "tmp/a.jpg", false),
            (["*.jpg"], ["tmp/**"], "keep/a.jpg", true),
            ([], ["*.tmp", ".git/**"], ".git/config", false),
            ([], ["*.tmp", ".git/**"], "x/y.tmp", false),
            ([], ["*.tmp", ".git/**"], "x/y.txt", true),
            (["photos/**"], ["photos/**"], "photos/a.jpg", false),
            (["photos/**"], ["*.tmp"], "photos/2024/a.tmp", false),
            (["photos/**"], ["*.tmp"], "photos/2024/a.heic", true),
            (["photos/**"], ["*.tmp"], "videos/a.mov", false),
            (["/docs/*.md"], [], "docs/readme.md", true),
            (["/docs/*.md"], [], "src/docs/readme.md", false),
            (["*.{jpg,jpeg,heic}"], ["**/thumbs/**"], "a/thumbs/b.jpg", false),
            (["*.{jpg,jpeg,heic}"], ["**/thumbs/**"], "a/full/b.JPG", false),
            (["*.{jpg,jpeg,heic}"], ["**/thumbs/**"], "a/full/b.heic", true),
        ] as [([String], [String], String, Bool)])
    func selects(include: [String], exclude: [String], path: String, selected: Bool) throws {
        let filter = try PathFilter(include: include, exclude: exclude)
        #expect(filter.selects(path) == selected)
        #expect(filter.includes.map(\.pattern) == include)
        #expect(filter.excludes.map(\.pattern) == exclude)
    }

    @Test("The all filter selects everything")
    func all() {
        for path in ["a", "a/b/c", ".hidden", ""] { #expect(PathFilter.all.selects(path)) }
    }

    @Test("Filters with the same patterns are equal")
    func equality() throws {
        #expect(try PathFilter(include: ["*.jpg"]) == PathFilter(include: ["*.jpg"]))
        #expect(try PathFilter(include: ["*.jpg"]) != PathFilter(exclude: ["*.jpg"]))
        #expect(try PathFilter() == PathFilter.all)
    }

    @Test("A bad pattern in either list is invalid configuration", arguments: [(["[x"], []), ([], ["{x"])] as [([String], [String])])
    func invalid(include: [String], exclude: [String]) {
        let error = #expect(throws: BuckiaError.self) { try PathFilter(include: include, exclude: exclude) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.path == (include + exclude).first)
    }
}
