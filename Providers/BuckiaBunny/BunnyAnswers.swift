import BuckiaCore
import BuckiaHTTP
import BuckiaProviderKit
import Foundation

// What the provider makes of Bunny's answers, each from the answer's bytes alone, with no
// server: the provider's calls read their answers through these, and the fuzz target
// `bunny-answer` (Tools/BuckiaFuzzTargets) feeds them hostile bytes.

extension BunnyProvider {
    /// A folder listing (the JSON array Bunny answers a `GET` of `folder/` with) as the items a
    /// folder walk reads: folders by name, and files with their descriptions when the name
    /// makes a valid key under `folder` (else without one, and the walk lists the name as
    /// unaddressable).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` when the answer is not a listing.
    package static func folderItems(answer data: Data, folder: String) throws -> [FolderItem] {
        let objects: [StorageObject]
        do {
            objects = try JSONValidation.decode([StorageObject].self, from: data, what: "Bunny's listing")
        } catch {
            throw BuckiaError(.corrupt, "Bunny listed the folder in JSON Buckia cannot read\(reason(error)).", operation: "list", path: folder, cause: error)
        }
        return objects.map { object in
            if object.IsDirectory { return FolderItem(object.ObjectName, kind: .folder) }
            let key = ObjectKey(ifValid: folder + object.ObjectName)
            return FolderItem(object.ObjectName, kind: .file(key.map { remoteFile($0, object) }))
        }
    }

    /// A `DESCRIBE` answer as the description of `key`, or nil when the key names a directory.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` when the answer describes nothing.
    package static func described(answer data: Data, key: ObjectKey) throws -> RemoteFile? {
        try storageObject(answer: data, key: key, operation: "stat").map { remoteFile(key, $0) }
    }

    /// The error the provider's HTTP client throws for a failed request with this status and
    /// body: Bunny's reading of its error document, or the client's mapping by status.
    package static func error(status: Int, body: Data) -> BuckiaError {
        let failure = HTTPFailure(method: "GET", url: "https://storage.bunnycdn.com/", status: status, body: body)
        return map(failure) ?? failure.buckiaError()
    }
}
