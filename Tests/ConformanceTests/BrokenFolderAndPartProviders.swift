import Buckia
import BuckiaConformance
import Foundation

// The folder and part-upload breakages of the mutation harness; BrokenProviders.swift holds
// the others and says how they are used.

/// Folders done wrong over a local folder: `deleteFolder` removes what is in it too,
/// `createFolder` replaces an object of that name, or folders are made without the capability.
struct CarelessFolderProvider: ForwardingStorageProvider {
    enum Fault: Sendable { case deletesContents, replacesObjects, undeclared }
    let base: any StorageProvider
    let root: URL
    let fault: Fault

    var capabilities: ProviderCapabilities {
        var capabilities = base.capabilities
        if fault == .undeclared { capabilities.features.remove(.folders) }
        return capabilities
    }

    func createFolder(_ key: ObjectKey) async throws {
        if fault == .replacesObjects, try await base.stat(remotePath: key) != nil { try await base.deleteFile(remotePath: key) }
        try await base.createFolder(key)
    }

    func deleteFolder(_ key: ObjectKey) async throws {
        guard fault == .deletesContents else { return try await base.deleteFolder(key) }
        let url = root.appendingPathComponent(key.rawValue, isDirectory: true)
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), isFolder.boolValue { try FileManager.default.removeItem(at: url) }
    }
}

/// Multipart uploads driven part by part, done wrong over the memory provider: a part sent
/// again is dropped, the last part is left out of the object, an abort keeps the upload, the
/// completion's condition is dropped (declared or not), or part uploads work undeclared.
struct CarelessPartProvider: ForwardingStorageProvider {
    enum Fault: Sendable {
        case keepsFirstPart, dropsLastPart, abortKeepsUpload, dropsCondition, dropsUndeclaredCondition, undeclared, completesEveryPart,
            finishesUndeclaredSelection, ignoresMD5, forgetsCompletion
    }
    let base: any StorageProvider
    let fault: Fault

    var capabilities: ProviderCapabilities {
        var capabilities = base.capabilities
        if fault == .undeclared { capabilities.features.remove(.partUploads) }
        if fault == .dropsUndeclaredCondition { capabilities.features.remove(.conditionalCompletion) }
        if fault == .finishesUndeclaredSelection { capabilities.features.remove(.partSelections) }
        return capabilities
    }

    func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        if fault == .keepsFirstPart, let held = try await base.uploadedParts(of: upload, to: key).first(where: { $0.number == number }) { return held }
        // Trusting the caller's MD5: the part sent is described by the MD5 of what it holds.
        let given = fault == .ignoresMD5 ? try Hashing.digests(ofFile: file, [.md5])[.md5] ?? md5 : md5
        return try await base.uploadPart(number, of: upload, to: key, file: file, md5: given)
    }

    func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        var listed = fault == .dropsLastPart && parts.count > 1 ? Array(parts.dropLast()) : parts
        if fault == .completesEveryPart { listed = try await base.uploadedParts(of: upload, to: key) }
        let kept = fault == .dropsCondition || fault == .dropsUndeclaredCondition ? nil : condition
        let stored = try await base.completePartUpload(upload, to: key, parts: listed, condition: kept)
        // Keeping nothing once done: a completion sent again finds no upload.
        if fault == .forgetsCompletion { try await base.abortPartUpload(upload, to: key) }
        return stored
    }

    func abortPartUpload(_ upload: String, to key: ObjectKey) async throws {
        if fault != .abortKeepsUpload { try await base.abortPartUpload(upload, to: key) }
    }
}
