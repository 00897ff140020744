import Buckia
import BuckiaTestSupport
import Foundation
import Testing

/// A layer that notes every call its hooks see.
struct CallRecorder: ForwardingStorageProvider {
    let base: any StorageProvider
    let admitted = Locked<[ProviderCall]>([])
    let intercepted = Locked<[ProviderCall]>([])

    func admit(_ call: ProviderCall) throws { admitted.withLock { $0.append(call) } }

    func intercept<T>(_ call: ProviderCall, _ forward: () async throws -> T) async throws -> T {
        intercepted.withLock { $0.append(call) }
        return try await forward()
    }
}

/// The docs' read-only layer (Docs/WritingAProvider.md), as a user writes it.
struct DocsReadOnlyProvider: ForwardingStorageProvider {
    let base: any StorageProvider

    func admit(_ call: ProviderCall) throws {
        guard call.kind == .write else { return }
        throw BuckiaError(.permissionDenied, "This remote is read-only; \(call) was refused.", operation: call.name)
    }
}

/// One forwarded requirement: what a layer must be told, and how to call it.
struct ForwardedCall: Sendable, CustomTestStringConvertible {
    let call: ProviderCall
    /// Whether it is async (``ForwardingStorageProvider/intercept(_:_:)`` sees only those).
    let isAsync: Bool
    let invoke: @Sendable (any StorageProvider) async throws -> Void

    var testDescription: String { "\(call.name) (\(call.kind))" }


    static func async(_ name: String, _ kind: ProviderCall.Kind, _ keys: [ObjectKey], _ invoke: @escaping @Sendable (any StorageProvider) async throws -> Void) -> ForwardedCall {
        ForwardedCall(call: ProviderCall(name, kind, keys: keys), isAsync: true, invoke: invoke)
    }

    static func now(_ name: String, _ kind: ProviderCall.Kind, _ keys: [ObjectKey], _ invoke: @escaping @Sendable (any StorageProvider) throws -> Void) -> ForwardedCall {
        ForwardedCall(call: ProviderCall(name, kind, keys: keys), isAsync: false, invoke: { try invoke($0) })
    }

    /// Every requirement a forwarding provider forwards, except `providerType` and `capabilities`.
    static func all() throws -> [ForwardedCall] {
        let (a, b, folder) = (try ObjectKey("a.txt"), try ObjectKey("b.txt"), try ObjectKey("folder"))
        return [
            async("connect", .connect, []) { _ = try await $0.connect() },
            async("testConnection", .connect, []) { _ = try await $0.testConnection() },
            async("uploadFile", .write, [b]) { _ = try await $0.uploadFile(localURL: URL(fileURLWithPath: "/nonexistent-buckia"), remotePath: b, options: UploadOptions()) },
            async("uploadData", .write, [b]) { _ = try await $0.uploadData(Data("new".utf8), remotePath: b, options: UploadOptions()) },
            async("upload", .write, [b]) { _ = try await $0.upload(from: .of(Data("new".utf8)), remotePath: b, options: UploadOptions()) },
            async("downloadFile", .read, [a]) {
                _ = try await $0.downloadFile(remotePath: a, localURL: URL(fileURLWithPath: "/nonexistent-buckia/a"), options: ReadOptions())
            },
            async("readData", .read, [a]) { _ = try await $0.readData(remotePath: a, options: ReadOptions()) },
            async("openRead", .read, [a]) { _ = try await $0.openRead(remotePath: a, options: ReadOptions()) },
            async("deleteFile", .write, [a]) { try await $0.deleteFile(remotePath: a) },
            async("deleteFiles", .write, [a, b]) { try await $0.deleteFiles([a, b]) },
            async("copyFile", .write, [a, b]) { _ = try await $0.copyFile(from: a, to: b) },
            async("moveFile", .write, [a, b]) { _ = try await $0.moveFile(from: a, to: b) },
            async("setModificationTime", .write, [a]) { _ = try await $0.setModificationTime(remotePath: a, to: Date(timeIntervalSince1970: 1)) },
            async("stat", .read, [a]) { _ = try await $0.stat(remotePath: a) },
            async("makeLister", .list, []) { _ = try await $0.makeLister(ListRequest(options: ListOptions())) },
            async("checksum", .read, [a]) { _ = try await $0.checksum(remotePath: a, algorithm: .md5) },
            now("getPublicURL", .read, [a]) { _ = try $0.getPublicURL(remotePath: a) },
            now("presignedURL", .read, [a]) { _ = try $0.presignedURL(for: a, method: .get, expires: .seconds(60)) },
            now("presignedURL", .write, [a]) { _ = try $0.presignedURL(for: a, method: .put, expires: .seconds(60)) },
            async("generateAccessToken", .read, []) { _ = try await $0.generateAccessToken(options: AccessTokenOptions(permissions: .readOnly)) },
            async("generateAccessToken", .write, []) { _ = try await $0.generateAccessToken(options: AccessTokenOptions(permissions: .all)) },
            now("fileForReading", .read, [a]) { _ = try $0.fileForReading(a) },
            async("receiveFile", .write, [b]) { _ = try await $0.receiveFile(at: b, condition: nil) { _ in } },
            async("receiveFile", .write, [b]) { _ = try await $0.receiveFile(at: b, options: UploadOptions()) { _ in } },
            now("synchronize", .maintenance, []) { try $0.synchronize() },
            now("removeWorkingFiles", .maintenance, []) { try $0.removeWorkingFiles() },
            async("authorizedURL", .read, [a]) { _ = try await $0.authorizedURL(for: a, expires: .seconds(60)) },
            async("unfinishedUploads", .list, []) { _ = try await $0.unfinishedUploads(prefix: "") },
            async("abortUpload", .write, []) { try await $0.abortUpload(UnfinishedUpload(key: "a.txt", id: "u", initiated: nil, status: .abandoned)) },
            async("startPartUpload", .write, [b]) { _ = try await $0.startPartUpload(to: b, options: UploadOptions()) },
            async("uploadPart", .write, [b]) {
                _ = try await $0.uploadPart(1, of: "u", to: b, file: URL(fileURLWithPath: "/nonexistent-buckia"), md5: Digest(bytes: Array(repeating: 0, count: 16)))
            },
            async("uploadedParts", .list, [b]) { _ = try await $0.uploadedParts(of: "u", to: b) },
            async("completePartUpload", .write, [b]) { _ = try await $0.completePartUpload("u", to: b, parts: [], condition: nil) },
            async("abortPartUpload", .write, [b]) { try await $0.abortPartUpload("u", to: b) },
            async("createFolder", .write, [folder]) { try await $0.createFolder(folder) },
            async("folderDate", .read, [folder]) { _ = try await $0.folderDate(folder) },
            async("deleteFolder", .write, [folder]) { try await $0.deleteFolder(folder) },
        ]
    }
}

/// A layer's two hooks see every forwarded requirement, described as it is: so a read-only
/// layer, a policy or a fault injector written against them misses no call.
@Suite("Provider layers: admit and intercept see every forwarded call")
struct ProviderLayerTests {
    static func memory() async throws -> any StorageProvider {
        let memory = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        try await memory.uploadData(Data("kept".utf8), remotePath: try ObjectKey("a.txt"), options: UploadOptions())
        return memory
    }

    @Test("admit sees each call once, named and kinded as the table says; intercept sees each async one", arguments: try ForwardedCall.all())
    func hooksSeeTheCall(_ row: ForwardedCall) async throws {
        let layer = CallRecorder(base: try await Self.memory())
        do { try await row.invoke(layer) } catch {}  // the memory provider lacks some; the hooks are what is checked
        #expect(layer.admitted.withLock { $0 } == [row.call])
        #expect(layer.intercepted.withLock { $0 } == (row.isAsync ? [row.call] : []))
    }

    @Test(
        "The read-only layers (the shipped one and the docs' own) refuse every write before it reaches the base, and let every other call through",
        arguments: try ForwardedCall.all(), [true, false])
    func readOnlyLayer(_ row: ForwardedCall, shipped: Bool) async throws {
        let base = try await Self.memory()
        let recorder = CallRecorder(base: base)
        let layer: any StorageProvider = shipped ? ReadOnlyLayer(recorder) : DocsReadOnlyProvider(base: recorder)
        var refusal: BuckiaError?
        do { try await row.invoke(layer) } catch let error as BuckiaError where error.message.contains("read-only") { refusal = error } catch {}
        if row.call.kind == .write {
            #expect(refusal?.code == .permissionDenied)
            #expect(recorder.admitted.withLock { $0 }.isEmpty, "the base was not called")
        } else {
            #expect(refusal == nil)
            #expect(recorder.admitted.withLock { $0 } == [row.call], "the call reached the base")
        }
        #expect(try await base.readData(remotePath: try ObjectKey("a.txt"), options: ReadOptions()) == Data("kept".utf8))
    }
}
