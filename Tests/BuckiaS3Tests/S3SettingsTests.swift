import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

/// Settings resolution, with the environment and home folder injected.
@Suite("S3 settings")
struct S3SettingsTests {
    static func configuration(_ options: [String: String] = [:], credentials: [String: String] = [:]) -> BuckiaConfiguration {
        BuckiaConfiguration(
            provider: .s3, bucketName: "photos",
            authConfig: AuthenticationConfiguration(method: .awsSignature, credentials: credentials.mapValues { Secret($0) }),
            options: options)
    }

    static let explicit = ["accessKeyId": "AKIDCONFIG", "secretAccessKey": "config-secret"]

    @Test("The per-remote HTTP options are read, and a bad one is refused by name")
    func httpOptions() throws {
        let settings = try S3Settings.resolve(
            Self.configuration(["stallTimeoutSeconds": "2", "maxAttempts": "6"], credentials: Self.explicit), environment: [:], home: TestHome.empty)
        #expect(settings.http.stallTimeout == .seconds(2))
        #expect(settings.http.maxAttempts == 6)
        #expect(S3Settings.knownOptions.isSuperset(of: ["stallTimeoutSeconds", "connectTimeoutSeconds", "caFile", "maxAttempts"]))
        let error = #expect(throws: BuckiaError.self) {
            try S3Settings.resolve(Self.configuration(["maxAttempts": "0"], credentials: Self.explicit), environment: [:], home: TestHome.empty)
        }
        #expect(error?.path == "options.maxAttempts")
    }

    @Test("Explicit credentials win over the environment and profiles")
    func explicitCredentials() throws {
        let settings = try S3Settings.resolve(
            Self.configuration(credentials: Self.explicit), environment: ["AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env"],
            home: TestHome.empty)
        #expect(settings.credentials.accessKeyId == "AKIDCONFIG")
    }

    @Test("The standard environment variables supply credentials, region and endpoint")
    func environment() throws {
        let settings = try S3Settings.resolve(
            Self.configuration(),
            environment: [
                "AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_SESSION_TOKEN": "token",
                "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
            ], home: TestHome.empty)
        #expect(settings.credentials.accessKeyId == "AKIDENV")
        #expect(settings.credentials.sessionToken?.exposedValue == "token")
        #expect(settings.region == "eu-west-1")
        #expect(settings.endpoint.absoluteString == "http://127.0.0.1:9000")
        #expect(settings.usesPathStyle, "a custom endpoint is addressed path-style")
    }

    @Test("Profiles come from ~/.aws/credentials and ~/.aws/config, chosen by AWS_PROFILE")
    func profiles() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-aws-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        try FileManager.default.createDirectory(at: home.appendingPathComponent(".aws"), withIntermediateDirectories: true)
        try """
            [default]
            aws_access_key_id = AKIDDEFAULT
            aws_secret_access_key = default-secret
            [work]
            aws_access_key_id = AKIDWORK ; a comment
            aws_secret_access_key = work-secret
            """.write(to: home.appendingPathComponent(".aws/credentials"), atomically: true, encoding: .utf8)
        try """
            [profile work]
            region = ap-southeast-2
            """.write(to: home.appendingPathComponent(".aws/config"), atomically: true, encoding: .utf8)
        let work = try S3Settings.resolve(Self.configuration(), environment: ["AWS_PROFILE": "work"], home: home.path)
        #expect(work.credentials.accessKeyId == "AKIDWORK")
        #expect(work.region == "ap-southeast-2")
        #expect(work.endpoint.absoluteString == "https://s3.ap-southeast-2.amazonaws.com")
        #expect(!work.usesPathStyle, "AWS endpoints use virtual-hosted addressing")
        let fallback = try S3Settings.resolve(Self.configuration(), environment: [:], home: home.path)
        #expect(fallback.credentials.accessKeyId == "AKIDDEFAULT")
    }

    /// A shared AWS file that is there but cannot be read (a folder in its place, bytes that
    /// are not UTF-8) was taken as absent: credentials then came silently from elsewhere.
    @Test("A shared AWS file that cannot be read is refused by path, not taken as absent", arguments: ["folder", "not UTF-8"])
    func unreadableProfileFile(_ kind: String) throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-aws-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let credentials = home.appendingPathComponent(".aws/credentials")
        if kind == "folder" {
            try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        } else {
            try FileManager.default.createDirectory(at: home.appendingPathComponent(".aws"), withIntermediateDirectories: true)
            try Data([0x5B, 0x64, 0x65, 0x66, 0x61, 0x75, 0x6C, 0x74, 0x5D, 0x0A, 0xFF, 0xFE]).write(to: credentials)
        }
        let environment = ["AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret"]
        let error = #expect(throws: BuckiaError.self) { try S3Settings.resolve(Self.configuration(), environment: environment, home: home.path) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.path == credentials.path)
        // Absent, it is no error: the environment's credentials are used.
        try FileManager.default.removeItem(at: credentials)
        #expect(try S3Settings.resolve(Self.configuration(), environment: environment, home: home.path).credentials.accessKeyId == "AKIDENV")
    }

    @Test("Missing credentials are unauthorized, with a message naming every source")
    func noCredentials() {
        let error = #expect(throws: BuckiaError.self) { try S3Settings.resolve(Self.configuration(), environment: [:], home: TestHome.empty) }
        #expect(error?.code == .unauthorized)
        #expect(error?.message.contains("AWS_ACCESS_KEY_ID") == true)
    }

    @Test("Bad settings are invalid configuration", arguments: [
        ["endpoint": "http://s3.example.com"], ["endpoint": "ftp://127.0.0.1"], ["endpoint": "not a url"],
        ["addressingStyle": "sideways"], ["partSizeMiB": "4"], ["multipartThresholdMiB": "x"],
    ])
    func badOptions(_ options: [String: String]) {
        let error = #expect(throws: BuckiaError.self) {
            try S3Settings.resolve(Self.configuration(options, credentials: Self.explicit), environment: [:], home: TestHome.empty)
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("Plain http to another host is allowed only when asked for")
    func allowHTTP() throws {
        let settings = try S3Settings.resolve(
            Self.configuration(["endpoint": "http://minio.internal:9000", "allowHTTP": "true"], credentials: Self.explicit),
            environment: [:], home: TestHome.empty)
        #expect(settings.endpoint.host == "minio.internal")
    }

    @Test("A configuration never prints the secret")
    func redaction() throws {
        let settings = try S3Settings.resolve(Self.configuration(credentials: Self.explicit), environment: [:], home: TestHome.empty)
        #expect(!"\(settings) \(settings.credentials) \(Self.configuration(credentials: Self.explicit))".contains("config-secret"))
    }
}

@Suite("S3 request URLs")
struct S3URLTests {
    static func provider(_ options: [String: String]) throws -> S3Provider {
        try S3Provider(settings: S3Settings.resolve(
            S3SettingsTests.configuration(options, credentials: S3SettingsTests.explicit), environment: [:], home: TestHome.empty), resources: .tests)
    }

    @Test("Keys are encoded once, with slashes kept, in both addressing styles", arguments: [
        ("path", "http://127.0.0.1:9000", "http://127.0.0.1:9000/photos/a%20b/c%2Bd%25e%23f%3Fg.txt"),
        ("virtual", "https://s3.eu-west-1.amazonaws.com", "https://photos.s3.eu-west-1.amazonaws.com/a%20b/c%2Bd%25e%23f%3Fg.txt"),
    ])
    func objectURLs(_ style: String, _ endpoint: String, _ expected: String) async throws {
        let provider = try Self.provider(["addressingStyle": style, "endpoint": endpoint])
        let presigned = try provider.presignedURL(for: ObjectKey("a b/c+d%e#f?g.txt"), method: .get, expires: .seconds(60))
        #expect(presigned.absoluteString.hasPrefix(expected + "?X-Amz-Algorithm=AWS4-HMAC-SHA256"))
        #expect(!presigned.absoluteString.contains("config-secret"))
    }

    @Test("Without publicBucket there is no public URL; with it, the plain object URL")
    func publicURL() throws {
        let closed = try Self.provider(["endpoint": "http://127.0.0.1:9000"])
        let error = #expect(throws: BuckiaError.self) { try closed.getPublicURL(remotePath: ObjectKey("x")) }
        #expect(error?.code == .unsupported)
        let open = try Self.provider(["endpoint": "http://127.0.0.1:9000", "publicBucket": "true"])
        #expect(try open.getPublicURL(remotePath: ObjectKey("x y")).absoluteString == "http://127.0.0.1:9000/photos/x%20y")
    }
}

@Suite("S3 access tokens")
struct S3AccessTokenTests {
    @Test("A token for one object is a presigned URL that never prints")
    func objectToken() async throws {
        let provider = try S3URLTests.provider(["endpoint": "http://127.0.0.1:9000"])
        // The expiry is bracketed by the clock read before and after the call (a second either
        // way for whole-second signing times), so no machine speed can fail or pass it wrongly.
        let before = Date()
        let token = try await provider.generateAccessToken(options: AccessTokenOptions(permissions: .readOnly, expiry: .seconds(600), pathPrefix: "a/b.txt"))
        let after = Date()
        #expect(token.value.exposedValue.hasPrefix("http://127.0.0.1:9000/photos/a/b.txt?X-Amz-Algorithm="))
        #expect(token.value.exposedValue.contains("X-Amz-Expires=600"))
        #expect(!"\(token)".contains("X-Amz-Signature"))
        #expect(token.expiresAt >= before.addingTimeInterval(599) && token.expiresAt <= after.addingTimeInterval(601))
    }

    @Test("Prefix scopes and mixed permissions are unsupported", arguments: [
        AccessTokenOptions(permissions: .readOnly, pathPrefix: "folder/"), AccessTokenOptions(permissions: .all, pathPrefix: "x"),
        AccessTokenOptions(permissions: .readOnly),
    ])
    func unsupported(_ options: AccessTokenOptions) async throws {
        let provider = try S3URLTests.provider(["endpoint": "http://127.0.0.1:9000"])
        let error = await #expect(throws: BuckiaError.self) { try await provider.generateAccessToken(options: options) }
        #expect(error?.code == .unsupported)
    }
}

@Suite("S3 part sizes")
struct S3PartSizeTests {
    @Test("Parts stay 5 MiB until a file needs more than 10,000 of them", arguments: [
        (Int64(1) << 30, Int64(5) << 20), (Int64(48) << 30, Int64(5) << 20), (Int64(49) << 30, Int64(6) << 20), (Int64(5) << 40, Int64(525) << 20),
    ])
    func partSizes(_ size: Int64, _ expected: Int64) throws {
        let settings = try S3Settings.resolve(
            S3SettingsTests.configuration(["endpoint": "http://127.0.0.1:9"], credentials: S3SettingsTests.explicit), environment: [:], home: TestHome.empty)
        #expect(settings.partSize(forFileOf: size) == expected)
        #expect((size + expected - 1) / expected <= 10_000)
    }
}

/// The vendor profiles: chosen from the host or the `vendor` option, overridden row by row,
/// and followed by the provider's capabilities and requests.
@Suite("S3 vendor profiles")
struct S3ProfileTests {
    static func settings(_ options: [String: String]) throws -> S3Settings {
        try S3Settings.resolve(
            S3SettingsTests.configuration(options, credentials: S3SettingsTests.explicit), environment: [:], home: TestHome.empty)
    }

    @Test(
        "auto names the vendor from the endpoint's host, and any other host is generic",
        arguments: [
            ("https://s3.eu-west-1.amazonaws.com", S3Profile.Vendor.aws), ("https://s3.cn-north-1.amazonaws.com.cn", .aws),
            ("https://acct.r2.cloudflarestorage.com", .r2), ("https://s3.us-west-004.backblazeb2.com", .b2),
            ("https://s3.eu-central-1.wasabisys.com", .wasabi), ("https://storage.googleapis.com", .gcs),
            ("https://minio.example.net", .generic), ("http://127.0.0.1:9000", .generic),
            ("https://notamazonaws.com", .generic), ("https://amazonaws.com.evil.example", .generic),
        ])
    func detection(_ endpoint: String, _ vendor: S3Profile.Vendor) throws {
        #expect(try Self.settings(["endpoint": endpoint]).profile.vendor == vendor)
    }

    @Test("An unknown vendor is refused by name, listing the known ones")
    func unknownVendor() {
        let error = #expect(throws: BuckiaError.self) { try Self.settings(["vendor": "ceph16"]) }
        #expect(error?.code == .invalidConfiguration && error?.path == "options.vendor")
        #expect(error?.message.contains("ceph, minio") == true)
    }

    @Test(
        "Capabilities follow the profile, and an option overrides its row",
        arguments: [
            (["vendor": "aws"], true, true), (["vendor": "ceph"], true, true), (["vendor": "b2"], false, true),
            (["vendor": "gcs"], false, true), (["vendor": "moto"], true, false), (["vendor": "ceph", "conditionalWrites": "false"], false, true),
            (["vendor": "moto", "verifiesContentMD5": "true"], true, true), (["vendor": "b2", "conditionalWrites": "true"], true, true),
        ])
    func capabilities(_ options: [String: String], _ conditional: Bool, _ verifies: Bool) throws {
        let provider = S3Provider(settings: try Self.settings(options.merging(["endpoint": "https://s3.example.net"]) { old, _ in old }), resources: .tests)
        #expect(provider.capabilities.supports(.conditionalWrite) == conditional)
        #expect(provider.capabilities.supports(.verifiesKnownChecksums) == verifies)
    }

    @Test("addressingStyle auto follows the profile: virtual-hosted for AWS, path-style for the others")
    func addressing() throws {
        #expect(try Self.settings(["vendor": "aws", "endpoint": "https://s3.example.net"]).usesPathStyle == false)
        #expect(try Self.settings(["vendor": "minio", "endpoint": "https://s3.example.net"]).usesPathStyle == true)
        #expect(try Self.settings([:]).usesPathStyle == false, "the default endpoint is AWS's")
    }

    @Test("Without DeleteObjects (gcs), deleteFiles sends one DELETE per key and deletes them all; with it, one POST")
    func deleteWithoutBatch() async throws {
        for (vendor, expected) in [("gcs", ["DELETE", "DELETE", "DELETE"]), ("moto", ["POST"])] {
            let (base, _, _) = try await makeS3Provider(auth: false, options: ["vendor": vendor])
            let methods = Locked<[String]>([])
            let provider = S3Provider(settings: base.settings, log: { line in
                // One line per attempt carries its headers; the outcome line is not counted.
                guard line.contains(" headers: ") else { return }
                let method = line.split(separator: " ").first { ["DELETE", "POST", "PUT", "GET", "HEAD"].contains($0) }
                if let method { methods.withLock { $0.append(String(method)) } }
            }, resources: .tests)
            for name in ["a", "b", "c"] { try await provider.uploadData(Data(name.utf8), remotePath: name) }
            methods.withLock { $0 = [] }
            try await provider.deleteFiles([try ObjectKey("a"), try ObjectKey("b"), try ObjectKey("c")])
            #expect(methods.withLock { $0 } == expected, "\(vendor)")
            #expect(try await provider.listFiles().isEmpty, "\(vendor)")
        }
    }
}

/// A login named by AWS's conventions: `AWS_WEB_IDENTITY_TOKEN_FILE` with `AWS_ROLE_ARN` (or the
/// profile's `web_identity_token_file` and `role_arn`), exchanged at `AWS_ENDPOINT_URL_STS`.
@Suite("S3 settings: credentials from a login")
struct S3WebIdentitySettingsTests {
    static let login = ["AWS_WEB_IDENTITY_TOKEN_FILE": "/run/token", "AWS_ROLE_ARN": "arn:aws:iam::1:role/app"]

    @Test("the environment's login is used when no keys are given, with AWS's defaults and overrides")
    func environment() throws {
        let settings = try S3Settings.resolve(S3SettingsTests.configuration(), environment: Self.login.merging(["AWS_REGION": "eu-west-1"]) { $1 }, home: TestHome.empty)
        let login = try #require(settings.webIdentity)
        #expect(login.roleArn == "arn:aws:iam::1:role/app")
        #expect(login.stsEndpoint.absoluteString == "https://sts.eu-west-1.amazonaws.com")
        #expect(login.sessionName.hasPrefix("buckia-"))
        let named = try S3Settings.resolve(
            S3SettingsTests.configuration(["allowHTTP": "true"]),
            environment: Self.login.merging(["AWS_ROLE_SESSION_NAME": "phone-1", "AWS_ENDPOINT_URL_STS": "http://10.0.0.5:8333"]) { $1 }, home: TestHome.empty)
        #expect(named.webIdentity?.sessionName == "phone-1")
        #expect(named.webIdentity?.stsEndpoint.absoluteString == "http://10.0.0.5:8333")
        let option = try S3Settings.resolve(
            S3SettingsTests.configuration(["stsEndpoint": "https://sts.example.com"]), environment: Self.login, home: TestHome.empty)
        #expect(option.webIdentity?.stsEndpoint.absoluteString == "https://sts.example.com")
    }

    @Test("keys in the configuration or the environment win over a login, as in the AWS SDKs; a login wins over the profile's keys")
    func precedence() throws {
        let explicit = try S3Settings.resolve(S3SettingsTests.configuration(credentials: S3SettingsTests.explicit), environment: Self.login, home: TestHome.empty)
        #expect(explicit.webIdentity == nil && explicit.credentials.accessKeyId == "AKIDCONFIG")
        let keys = try S3Settings.resolve(
            S3SettingsTests.configuration(), environment: Self.login.merging(["AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "s"]) { $1 },
            home: TestHome.empty)
        #expect(keys.webIdentity == nil && keys.credentials.accessKeyId == "AKIDENV")
        let home = try TestFolder.make("buckia-s3-login")
        defer { TestFolder.remove(home) }
        try FileManager.default.createDirectory(at: home.appendingPathComponent(".aws"), withIntermediateDirectories: true)
        try Data("[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = f\n".utf8).write(to: home.appendingPathComponent(".aws/credentials"))
        try Data("[default]\nrole_arn = arn:aws:iam::1:role/profile\nweb_identity_token_file = /run/profile-token\n".utf8)
            .write(to: home.appendingPathComponent(".aws/config"))
        let profile = try S3Settings.resolve(S3SettingsTests.configuration(), environment: [:], home: home.path)
        #expect(profile.webIdentity?.roleArn == "arn:aws:iam::1:role/profile")
        let environment = try S3Settings.resolve(S3SettingsTests.configuration(), environment: Self.login, home: home.path)
        #expect(environment.webIdentity?.roleArn == "arn:aws:iam::1:role/app")
    }

    @Test("a login named without what it needs is refused by name", arguments: [
        (["AWS_WEB_IDENTITY_TOKEN_FILE": "/run/token"], "AWS_ROLE_ARN"),
        (login.merging(["AWS_ROLE_SESSION_NAME": "a"]) { $1 }, "AWS_ROLE_SESSION_NAME"),
        (login.merging(["AWS_ROLE_SESSION_NAME": "has space"]) { $1 }, "AWS_ROLE_SESSION_NAME"),
        (login.merging(["AWS_ENDPOINT_URL_STS": "http://sts.example.com"]) { $1 }, "options.stsEndpoint"),
    ])
    func refused(_ environment: [String: String], _ path: String) {
        let error = #expect(throws: BuckiaError.self) { try S3Settings.resolve(S3SettingsTests.configuration(), environment: environment, home: TestHome.empty) }
        #expect(error?.path == path, "\(error.map { "\($0)" } ?? "")")
    }

    @Test("the token file is read at each exchange: missing, empty, a device or too long is an authorization error")
    func tokenFile() async throws {
        let folder = try TestFolder.make("buckia-token-file")
        defer { TestFolder.remove(folder) }
        let file = folder.appendingPathComponent("token")
        let read = WebIdentitySettings.tokenFile(file.path)
        try Data("first.token.x\n".utf8).write(to: file)
        #expect(try await read() == "first.token.x")
        try Data("second.token.y".utf8).write(to: file)
        #expect(try await read() == "second.token.y", "the file was not read again")
        for bad in [Data(), Data(repeating: 0x41, count: 20_001)] {
            try bad.write(to: file)
            let error = await #expect(throws: BuckiaError.self) { _ = try await read() }
            #expect(error?.code == .unauthorized)
        }
        try FileManager.default.removeItem(at: file)
        let missing = await #expect(throws: BuckiaError.self) { _ = try await read() }
        #expect(missing?.code == .unauthorized)
        let device = await #expect(throws: BuckiaError.self) { _ = try await WebIdentitySettings.tokenFile("/dev/zero")() }
        #expect(device != nil)
    }
}
