import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error that is neither Buckia's, POSIX nor Cocoa.
private struct PluginFailure: Error, CustomStringConvertible {
    var description: String { "the plugin fell over" }
}

struct BuckiaErrorTests {
    static let allCodes: [BuckiaError.Code] = [
        .notFound, .alreadyExists, .permissionDenied, .unauthorized, .conditionNotMatch, .rateLimited,
        .invalidConfiguration, .invalidPath, .checksumMismatch, .unsupported, .corrupt, .transient, .cancelled, .io,
    ]

    @Test("Every code is distinct and describes itself by name")
    func codes() {
        #expect(Set(Self.allCodes).count == Self.allCodes.count)
        #expect(Self.allCodes.map(\.description) == [
            "notFound", "alreadyExists", "permissionDenied", "unauthorized", "conditionNotMatch", "rateLimited",
            "invalidConfiguration", "invalidPath", "checksumMismatch", "unsupported", "corrupt", "transient",
            "cancelled", "io",
        ])
    }

    @Test("Only transient and rate-limited failures are retryable", arguments: allCodes)
    func retryable(code: BuckiaError.Code) {
        #expect(BuckiaError(code, "x").isRetryable == (code == .transient || code == .rateLimited))
    }

    @Test(
        "The description carries code, message, operation, path and cause",
        arguments: [
            (BuckiaError(.notFound, "No object."), ["notFound: No object."], ["operation", "path", "cause"]),
            (BuckiaError(.io, "Disk broke.", operation: "upload"), ["io: Disk broke.", "operation: upload"], ["path:"]),
            (BuckiaError(.invalidPath, "Bad key.", path: "a/../b"), ["path: \"a/../b\""], ["operation:"]),
            (BuckiaError(.transient, "Reset.", operation: "list", path: "p/", cause: PluginFailure()),
             ["transient: Reset.", "operation: list", "path: \"p/\"", "cause: the plugin fell over"], []),
        ] as [(BuckiaError, [String], [String])])
    func description(error: BuckiaError, contains: [String], lacks: [String]) {
        for text in contains { #expect(error.description.contains(text), "missing \(text)") }
        for text in lacks { #expect(!error.description.contains(text), "unexpected \(text)") }
        #expect(error.debugDescription == "BuckiaError(\(error.description))")
        #expect(String(reflecting: error) == error.debugDescription)
    }

    @Test("Wrapping keeps a BuckiaError and fills in only missing context")
    func wrappingKeepsBuckiaError() {
        let original = BuckiaError(.checksumMismatch, "Bad bytes.", retryAfter: .seconds(3))
        let filled = BuckiaError.wrapping(original, operation: "download", path: "a.txt")
        #expect(filled.code == .checksumMismatch)
        #expect(filled.message == "Bad bytes.")
        #expect(filled.operation == "download")
        #expect(filled.path == "a.txt")
        #expect(filled.retryAfter == .seconds(3))

        let kept = BuckiaError.wrapping(filled, operation: "sync", path: "b.txt")
        #expect(kept.operation == "download")
        #expect(kept.path == "a.txt")
    }

    @Test("Cancellation wraps as cancelled")
    func cancellation() {
        let error = BuckiaError.wrapping(CancellationError(), operation: "upload", path: "k")
        #expect(error.code == .cancelled)
        #expect(!error.isRetryable)
        #expect(error.operation == "upload")
        #expect(error.path == "k")
    }

    @Test(
        "errno values map to the nearest code",
        arguments: [
            (ENOENT, .notFound), (EEXIST, .alreadyExists), (EACCES, .permissionDenied), (EPERM, .permissionDenied),
            (EROFS, .permissionDenied), (ENOSPC, .io), (ENAMETOOLONG, .invalidPath), (ENOTDIR, .invalidPath),
            (EISDIR, .invalidPath), (EINTR, .transient), (EAGAIN, .transient), (EIO, .io),
        ] as [(Int32, BuckiaError.Code)])
    func posix(number: Int32, code: BuckiaError.Code) throws {
        let direct = BuckiaError.posix(number, operation: "open", path: "/x/y")
        #expect(direct.code == code)
        #expect(direct.operation == "open")
        #expect(direct.path == "/x/y")
        #expect(direct.description.contains("/x/y"))
        let cause = try #require(direct.cause as? POSIXErrorNumber)
        #expect(cause.rawValue == number)

        let posixCode = try #require(POSIXErrorCode(rawValue: number))
        #expect(BuckiaError.wrapping(POSIXError(posixCode), operation: "read", path: "p").code == direct.code)
        let ns = NSError(domain: NSPOSIXErrorDomain, code: Int(number))
        #expect(BuckiaError.wrapping(ns, operation: "read", path: "p").code == direct.code)
    }

    @Test(
        "Cocoa file errors map to the nearest code",
        arguments: [
            (CocoaError.Code.fileNoSuchFile, BuckiaError.Code.notFound), (.fileReadNoSuchFile, .notFound),
            (.fileWriteNoPermission, .permissionDenied), (.fileReadNoPermission, .permissionDenied),
            (.fileWriteFileExists, .alreadyExists), (.fileReadCorruptFile, .corrupt), (.fileWriteOutOfSpace, .io),
        ])
    func cocoa(cocoaCode: CocoaError.Code, code: BuckiaError.Code) {
        let error = BuckiaError.wrapping(CocoaError(cocoaCode), operation: "read", path: "f")
        #expect(error.code == code)
        #expect(error.cause != nil)
        #expect(!error.message.contains("NSCocoaErrorDomain") && !error.message.contains("could not be completed"), "\(error.message)")
    }

    // Regression: `cp -r` into a path under a file printed "The operation could not be
    // completed. (NSCocoaErrorDomain error 512.)".
    @Test("A real Foundation file error names its path and its cause, never a Cocoa error number")
    func realFoundationError() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-cocoa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("file")
        try Data("x".utf8).write(to: file)
        for target in [file.appendingPathComponent("sub"), file.appendingPathComponent("sub/deeper")] {
            do {
                try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
                Issue.record("creating a folder under a file succeeded")
            } catch {
                let wrapped = BuckiaError.wrapping(error, operation: "create folder")
                #expect(!wrapped.message.contains("NSCocoaErrorDomain") && !wrapped.message.contains("could not be completed"), "\(wrapped.message)")
                #expect(wrapped.message.contains(folder.lastPathComponent), "\(wrapped.message)")
            }
        }
    }

    @Test("A real missing-file read wraps as notFound")
    func realMissingFile() {
        let url = URL(fileURLWithPath: TestHome.empty + "/missing-\(UUID().uuidString)")
        do {
            _ = try Data(contentsOf: url)
            Issue.record("reading a missing file succeeded")
        } catch {
            #expect(BuckiaError.wrapping(error, operation: "read", path: url.path).code == .notFound)
        }
    }

    @Test("Any other error wraps as io, keeping its text as the cause")
    func otherErrors() {
        let error = BuckiaError.wrapping(PluginFailure(), operation: "stat", path: "k")
        #expect(error.code == .io)
        #expect(error.operation == "stat")
        #expect(error.description.contains("the plugin fell over"))
        #expect((error.cause as? SendableErrorDescription)?.description == "the plugin fell over")
    }

    @Test("The provider helpers build unsupported and notFound errors")
    func helpers() throws {
        let unsupported = BuckiaError.unsupported(.presign, provider: .bunny, operation: "presign")
        #expect(unsupported.code == .unsupported)
        #expect(unsupported.message.contains("presign"))
        let notFound = BuckiaError.notFound(try ObjectKey("a/b"), operation: "read")
        #expect(notFound.code == .notFound)
        #expect(notFound.path == "a/b")
    }
}

@Suite("URL redaction in errors")
struct URLRedactionTests {
    @Test("URLs in error text lose their query and user information", arguments: [
        ("fetch https://bucket.s3.amazonaws.com/k?X-Amz-Signature=SECRETSIG&X-Amz-Credential=AKIA now",
         "fetch https://bucket.s3.amazonaws.com/k?<REDACTED> now"),
        ("url=\"http://user:PASSWORD@127.0.0.1:9000/b?token=SECRETSIG\"", "url=\"http://<REDACTED>@127.0.0.1:9000/b?<REDACTED>\""),
        ("plain text, no url", "plain text, no url"),
        ("two: https://a/x?sig=SECRETSIG, https://b/y#frag", "two: https://a/x?<REDACTED>, https://b/y?<REDACTED>"),
    ])
    func scrub(_ text: String, _ expected: String) {
        #expect(URLRedaction.scrub(text) == expected)
    }

    // Regression: wrapping a URLError once put its failing URL, signature and all, in the message.
    @Test("Wrapping an error that carries a URL keeps its signature out of the message")
    func wrappedURLError() {
        let url = "https://h/object?X-Amz-Signature=SECRETSIG"
        let error = NSError(domain: NSURLErrorDomain, code: -1001, userInfo: [
            NSURLErrorFailingURLErrorKey: URL(string: url) as Any, "NSErrorFailingURLStringKey": url, NSLocalizedDescriptionKey: "The request timed out.",
        ])
        let wrapped = BuckiaError.wrapping(error, operation: "download")
        #expect(!"\(wrapped)".contains("SECRETSIG"))
        #expect(wrapped.code == .transient)
    }
}

/// What `BuckiaError.wrapping` makes of a foreign error: only a network failure is transient.
@Suite("Wrapping foreign errors")
struct WrappingClassificationTests {
    @Test(
        "A URL error is transient only for a network failure; other errors that name a URL are not guessed transient",
        arguments: [
            (NSURLErrorDomain, -1001, BuckiaError.Code.transient), (NSURLErrorDomain, -1004, .transient), (NSURLErrorDomain, -1005, .transient),
            (NSURLErrorDomain, -1003, .transient), (NSURLErrorDomain, -1000, .io), (NSURLErrorDomain, -1202, .io),
            (NSURLErrorDomain, -999, .cancelled), ("com.example.parser", 7, .io),
        ])
    func classification(_ domain: String, _ code: Int, _ expected: BuckiaError.Code) {
        // Both carry a URL with a signature in their userInfo; neither may show it.
        let url = "https://bucket.example/key?X-Amz-Signature=SECRETSIG"
        let error = NSError(domain: domain, code: code, userInfo: [NSURLErrorFailingURLErrorKey: URL(string: url) as Any, NSLocalizedDescriptionKey: "failed at \(url)"])
        let wrapped = BuckiaError.wrapping(error, operation: "download")
        #expect(wrapped.code == expected)
        #expect(!String(describing: wrapped).contains("SECRETSIG"))
    }
}
