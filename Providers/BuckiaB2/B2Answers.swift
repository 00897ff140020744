import BuckiaCore
import BuckiaHTTP
import Foundation

// What the provider makes of B2's answers, each from the answer's bytes alone, with no server
// and no session: the provider's calls read their answers through these, and the fuzz target
// `b2-answer` (Tools/BuckiaFuzzTargets) feeds them hostile bytes.

extension B2Provider {
    /// One b2_list_file_names page as listing entries in key-byte order, and the name the
    /// next page starts at. B2's `startFileName` is inclusive, so on the first page of a
    /// listing that resumes after `startAfter`, that name and what sorts before it are dropped.
    /// Names that are not valid keys are listed as unaddressable; hide markers and unfinished
    /// large files are not files and are left out.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` when the answer is not a listing.
    package static func listingPage(answer data: Data, startAfter: String?) throws -> (entries: [ListEntry], next: String?) {
        let page = try B2API.decode(B2API.FileNames.self, from: data, call: "b2_list_file_names")
        var entries: [ListEntry] = []
        entries.reserveCapacity(page.files.count)
        for file in page.files {
            if let startAfter, !startAfter.utf8Precedes(file.fileName) { continue }
            switch file.action {
            case "folder":
                if ObjectKey.isValidPrefix(file.fileName) {
                    entries.append(.directory(file.fileName))
                } else {
                    entries.append(.unaddressable(UnaddressableKey(file.fileName, reason: "the folder's name is not a valid key prefix")))
                }
            case "upload", nil:
                entries.append(UnaddressableKey.entry(for: file.fileName) { key in remoteFile(key, file) })
            default:
                continue
            }
        }
        return (entries.sortedByKeyBytes(), page.nextFileName)
    }

    /// The file version B2 described in its answer to `call` (b2_upload_file, b2_copy_file,
    /// b2_finish_large_file) as the description of `key`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` when the answer describes no file.
    package static func describedFile(answer data: Data, key: ObjectKey, call: String) throws -> RemoteFile {
        remoteFile(key, try B2API.decode(B2API.File.self, from: data, call: call))
    }

    /// The API and download URLs a b2_authorize_account answer would send requests to, read
    /// and checked as the provider's session reads them.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` for an answer that is not an
    ///   authorization, names no usable URL, leads from https to http, or carries no token.
    package static func readAuthorization(answer data: Data, settings: B2Settings) throws -> (api: URL, download: URL) {
        let account = try B2Session.account(answer: data, settings: settings)
        return (account.apiURL, account.downloadURL)
    }

    /// The error the provider's HTTP client throws for a failed request with this status and
    /// body: B2's reading of its error document, or the client's mapping by status when there
    /// is none.
    package static func error(status: Int, body: Data) -> BuckiaError {
        let failure = HTTPFailure(method: "POST", url: "https://api.backblazeb2.com/", status: status, body: body)
        return B2ErrorMapping.map(failure) ?? failure.buckiaError()
    }
}
