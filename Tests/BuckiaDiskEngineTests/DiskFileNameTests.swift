import BuckiaConformance
import BuckiaCore
import BuckiaDiskEngine
import Foundation
import Testing

@Suite("Disk file names")
struct DiskFileNameTests {
    @Test("Every unusual key gets a safe, reversible file name", arguments: EngineConformance.unusualKeys)
    func safeName(_ raw: String) throws {
        let key = CacheKey(verbatim: raw)
        let name = DiskFileName.fileName(for: key)
        #expect(!name.isEmpty)
        #expect(!name.contains("/") && !name.contains("\\") && !name.utf8.contains(0))
        #expect(!name.hasPrefix("."), "a leading dot hides the file and allows . and ..")
        #expect(name.utf8.count <= 255, "NAME_MAX")
        #expect(name == name.lowercased(), "names must not depend on case")
        #expect(DiskFileName.isValueFileName(name))
        if name.hasPrefix("~") {
            #expect(name.utf8.count == 65)
            #expect(DiskFileName.key(fromFileName: name) == nil, "a hashed name is resolved through the header")
        } else {
            #expect(DiskFileName.key(fromFileName: name).map { Array($0.value.utf8) } == Array(raw.utf8))
        }
    }

    @Test(
        "Keys that differ only by case get names that differ on a case-insensitive file system",
        arguments: [
            ["abc", "ABC", "Abc", "aBc", "abC"],
            ["Straße", "STRASSE", "strasse", "straße"],
            [String(repeating: "k", count: 300), String(repeating: "K", count: 300), String(repeating: "k", count: 299) + "K"],
            ["Ω-omega", "ω-omega", "É", "é"],
        ])
    func caseInsensitiveUnique(_ keys: [String]) {
        let names = keys.map { DiskFileName.fileName(for: CacheKey(verbatim: $0)).lowercased() }
        #expect(Set(names).count == keys.count, "\(names)")
    }

    @Test(
        "Short keys are named by the RFC 4648 base32 test vectors, lowercased and unpadded",
        arguments: [("f", "my"), ("fo", "mzxq"), ("foo", "mzxw6"), ("foob", "mzxw6yq"), ("fooba", "mzxw6ytb"), ("foobar", "mzxw6ytboi")])
    func rfcVectors(_ key: String, _ name: String) {
        #expect(DiskFileName.fileName(for: CacheKey(verbatim: key)) == name)
        #expect(DiskFileName.key(fromFileName: name) == CacheKey(verbatim: key))
    }

    @Test("Keys up to 125 bytes are encoded; longer keys are hashed", arguments: [(1, false), (125, false), (126, true), (4096, true)])
    func lengthBoundary(_ length: Int, _ hashed: Bool) {
        let name = DiskFileName.fileName(for: CacheKey(verbatim: String(repeating: "x", count: length)))
        #expect(name.hasPrefix("~") == hashed)
        #expect(name.utf8.count <= DiskFileName.maximumEncodedLength)
    }

    @Test(
        "Names the engine never writes are not taken for keys",
        arguments: [
            "README", "readme", ".DS_Store", "notes.txt", "a", "abc", "mzxw7", "aa", "~", "~abc",
            "~" + String(repeating: "A", count: 64), "~" + String(repeating: "g", count: 64), "MZXW6",
        ])
    func foreignNames(_ name: String) {
        #expect(!DiskFileName.isValueFileName(name))
        #expect(DiskFileName.key(fromFileName: name) == nil)
    }
}
