import BuckiaCore
import BuckiaHTTP
import BuckiaProviderKit
import Foundation

extension B2Provider {
    /// A b2_list_file_names listing: B2's `nextFileName` carries it from page to page and is
    /// the resume token. B2's `startFileName` is inclusive, so a start-after name is asked for
    /// and then dropped, with any folder that does not sort after it. Names that are not valid
    /// ``BuckiaCore/ObjectKey``s (written by other tools) are listed as unaddressable.
    ///
    /// Pages hold at most 1,000 names: B2 bills a listing per 1,000 names asked for, whatever
    /// it returns.
    public func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        let options = request.options
        let provider = self
        return try TokenPagedLister(request: request) { token in
            let answer = try await provider.fileNames(
                prefix: options.prefix, delimiter: options.recursive ? nil : "/", start: token ?? options.startAfter,
                count: options.effectivePageSize(maximum: 1000))
            return try B2Provider.listingPage(answer: answer, startAfter: token == nil ? options.startAfter : nil)
        }
    }

    /// One b2_list_file_names page, as B2 answered it.
    func fileNames(prefix: String, delimiter: String?, start: String?, count: Int) async throws -> Data {
        var fields: [String: any Sendable] = ["bucketId": try await bucketId(), "maxFileCount": count]
        if !prefix.isEmpty { fields["prefix"] = prefix }
        if let delimiter { fields["delimiter"] = delimiter }
        if let start, !start.isEmpty { fields["startFileName"] = start }
        return try await api("b2_list_file_names", fields, operation: "list", path: prefix)
    }
}
