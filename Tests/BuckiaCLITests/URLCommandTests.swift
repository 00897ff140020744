import Foundation
import Testing

@Suite("buckia url")
struct URLCommandTests {
    static let s3Remote = [
        "BUCKIA_REMOTE_LAKE_PROVIDER": "s3", "BUCKIA_REMOTE_LAKE_BUCKET": "lake",
        "BUCKIA_REMOTE_LAKE_ENDPOINT": "http://127.0.0.1:9", "BUCKIA_REMOTE_LAKE_CREDENTIAL_ACCESS_KEY_ID": "AKIDCLI",
        "BUCKIA_REMOTE_LAKE_CREDENTIAL_SECRET_ACCESS_KEY": "cli-secret-never-printed",
    ]

    @Test("A presigned URL is printed for S3 remotes, offline, without the secret", arguments: [
        ("1h", "X-Amz-Expires=3600"), ("90s", "X-Amz-Expires=90"), ("7d", "X-Amz-Expires=604800"), ("15m", "X-Amz-Expires=900"),
    ])
    func presign(_ expires: String, _ expected: String) throws {
        let result = try CLIHarness().run("url", "lake:dir/a b.txt", "--expires", expires, extraEnvironment: Self.s3Remote)
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("http://127.0.0.1:9/lake/dir/a%20b.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"))
        #expect(result.stdout.contains(expected) && result.stdout.contains("X-Amz-Signature="))
        #expect(!(result.stdout + result.stderr).contains("cli-secret-never-printed"))
    }

    @Test("Bad durations and durations over seven days exit 2; a provider without presigning exits 1", arguments: [
        (["url", "lake:x", "--expires", "soon"], Int32(2)), (["url", "lake:x", "--expires", "8d"], Int32(2)),
        (["url", "lake:x", "--expires", "106751991167301d"], Int32(2)),
        (["url", "default:x"], Int32(1)),
    ])
    func errors(_ arguments: [String], _ status: Int32) throws {
        let result = try CLIHarness().runArray(arguments, extraEnvironment: Self.s3Remote)
        #expect(result.status == status)
        #expect(result.stderr.hasPrefix("buckia"))
    }
}
