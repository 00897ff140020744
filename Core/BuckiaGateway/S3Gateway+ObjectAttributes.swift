import BuckiaCore
import Foundation

/// GetObjectAttributes: what S3 tells of an object without its bytes — its tag, checksum,
/// parts, storage class and size, each only when asked for in `x-amz-object-attributes`.
extension S3Gateway {
    /// The attributes a request may ask for, as S3 names them.
    static let objectAttributeNames: Set<String> = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]

    func objectAttributes(_ context: RequestContext) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .read)
        let asked = Set(
            context.request.values("x-amz-object-attributes").flatMap { $0.split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        guard !asked.isEmpty else {
            throw S3Failure("InvalidArgument", "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty")
        }
        guard asked.isSubset(of: Self.objectAttributeNames) else { throw S3Failure("InvalidArgument", "Invalid attribute name specified.") }
        var maxParts = 1000
        if let text = try context.header("x-amz-max-parts") {
            guard text.utf8.count <= 6, let value = Int(text), value >= 0 else { throw S3Failure("InvalidArgument", "x-amz-max-parts must be a number.") }
            maxParts = min(value, 1000)
        }
        var marker = 0
        if let text = try context.header("x-amz-part-number-marker") {
            guard text.utf8.count <= 6, let value = Int(text), value >= 0 else { throw S3Failure("InvalidArgument", "x-amz-part-number-marker must be a number.") }
            marker = value
        }
        guard let file = try Blocking.wait({ [provider] in try await provider.stat(remotePath: key) }) else {
            throw S3Failure("NoSuchKey", "The specified key does not exist.")
        }
        let etag = Self.etag(of: file)
        if let notModified = try checkConditions(context, file: file, etag: etag, prefix: "") { return notModified }
        let record = try objectRecord(file)
        var xml = "<GetObjectAttributesResponse xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        // S3 gives the tag here without its quotes.
        if asked.contains("ETag") { xml += "<ETag>\(Self.bareTag(etag).xmlEscaped)</ETag>" }
        if asked.contains("Checksum"), let checksum = record.checksum {
            xml += "<Checksum>\(Self.checksumElements(checksum))</Checksum>"
        }
        if asked.contains("ObjectParts"), let count = record.partsCount {
            let numbers = Array(1...count).filter { $0 > marker }
            let shown = numbers.prefix(maxParts)
            xml += "<ObjectParts><PartsCount>\(count)</PartsCount><PartNumberMarker>\(marker)</PartNumberMarker>"
            xml += "<NextPartNumberMarker>\(shown.last ?? marker)</NextPartNumberMarker><MaxParts>\(maxParts)</MaxParts><IsTruncated>\(numbers.count > shown.count)</IsTruncated>"
            for number in shown {
                xml += "<Part><PartNumber>\(number)</PartNumber><Size>\(record.partSizes[number - 1])</Size></Part>"
            }
            xml += "</ObjectParts>"
        }
        if asked.contains("StorageClass") { xml += "<StorageClass>STANDARD</StorageClass>" }
        if asked.contains("ObjectSize") { xml += "<ObjectSize>\(file.size)</ObjectSize>" }
        var response = Self.xml(xml + "</GetObjectAttributesResponse>")
        if let modified = file.serverModified ?? file.modificationDate { response.headers.append(("Last-Modified", Self.httpDate(modified))) }
        return response
    }
}
