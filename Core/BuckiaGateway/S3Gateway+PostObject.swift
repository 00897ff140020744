import BuckiaCore
import BuckiaSecurity
import BuckiaSigV4
import Foundation

extension S3Gateway {
    /// Whether a request is a browser's form upload: a POST to a bucket, with no subresource
    /// and no SigV4 signature of its own (the form carries it), of `multipart/form-data`.
    static func isPostObject(_ context: RequestContext) -> Bool {
        context.request.method == "POST" && !context.bucket.isEmpty && context.key.isEmpty && context.query.isEmpty
            && context.request.values("authorization").isEmpty
            && context.request.values("content-type").first?.lowercased().hasPrefix("multipart/form-data") == true
    }

    /// POST Object: a browser's form upload, signed by a policy (SigV4: the form's
    /// `x-amz-signature` is the policy's HMAC with the credential's signing key). The policy's
    /// conditions are checked, then the principal's grants on the key, as for a PUT; the file
    /// streams to the backend with its length checked against `content-length-range` as it
    /// arrives, and nothing is stored unless every check holds.
    func postObject(_ context: inout RequestContext, body: HTTPRequestBody) throws -> HTTPServerResponse {
        context.operation = "PostObject"
        try Self.checkBucketName(context.bucket)
        let form = try S3PostForm(contentType: context.request.values("content-type").first ?? "", body: body)
        var fields = form.fields
        func field(_ name: String) throws -> String {
            guard let value = fields[name] else { throw S3Failure("InvalidArgument", "Bucket POST must contain a field named '\(name)'.") }
            return value
        }
        let policyText = try field("policy")
        let principal: GatewayPrincipal
        if let algorithm = fields["x-amz-algorithm"] {
            guard algorithm == "AWS4-HMAC-SHA256" else { throw S3Failure("InvalidArgument", "Only AWS4-HMAC-SHA256 signs a form here (x-amz-algorithm).") }
            let (credential, date, signature) = (try field("x-amz-credential"), try field("x-amz-date"), try field("x-amz-signature"))
            do {
                principal = try authenticator.authenticatePolicy(
                    policyText, credential: credential, date: date, signature: signature, sessionToken: fields["x-amz-security-token"])
            } catch {
                throw S3Failure(error.code, error.message, status: error.status)
            }
        } else {
            // Signature Version 2, which boto3's generate_presigned_post still makes by default.
            let (accessKeyId, signature) = (try field("awsaccesskeyid"), try field("signature"))
            do {
                principal = try authenticator.authenticatePolicyV2(policyText, accessKeyId: accessKeyId, signature: signature, sessionToken: fields["x-amz-security-token"])
            } catch {
                throw S3Failure(error.code, error.message, status: error.status)
            }
        }
        context.principal = principal
        let policy = try S3PostPolicy(base64: policyText)
        fields["bucket"] = context.bucket
        try policy.check(fields, now: options.clock())

        let keyTemplate = try field("key")
        context.key = keyTemplate.replacingOccurrences(of: "${filename}", with: form.filename ?? "")
        context.resource = "/" + context.bucket + "/" + context.key
        let key = try remoteKey(context, for: .write)
        try requireBucket(context.bucket)

        // The form's fields carry what a PUT's headers would, read the same way.
        let upload = try Self.storedAttributes(fields.map { (name: $0.key, value: $0.value) })
        if let acl = fields["acl"], acl != "private" { throw S3Failure.unsupportedFeature("the canned ACL \(acl)") }
        if let storageClass = fields["x-amz-storage-class"], storageClass != "STANDARD" { throw S3Failure.unsupportedFeature("the storage class \(storageClass)") }
        do {
            try upload.validate()
            try upload.checkSupported(by: provider)
        } catch {
            throw S3Failure(error)
        }

        let range = policy.lengthRange
        let limit = min(range.upperBound, self.options.maximumPartSize)
        let stored = try streamUpload(reading: { try form.nextFileChunk(limit: limit) }) { [provider, upload] stream in
            try await provider.upload(from: stream, remotePath: key, options: upload)
        } before: {
            // The whole file has been read: too short is refused before the backend keeps it.
            guard form.count >= range.lowerBound else {
                throw S3Failure("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size.")
            }
        }
        context.bytesIn = form.count
        let etag = Self.etag(of: stored)
        if let redirect = fields["success_action_redirect"], var components = URLComponents(string: redirect), components.scheme != nil {
            components.queryItems = (components.queryItems ?? []) + [
                URLQueryItem(name: "bucket", value: context.bucket), URLQueryItem(name: "key", value: context.key), URLQueryItem(name: "etag", value: etag),
            ]
            if let location = components.string { return HTTPServerResponse(status: 303, headers: [("Location", location), ("ETag", etag)]) }
        }
        let location = "/" + context.bucket + "/" + Self.urlEncode(context.key)
        switch fields["success_action_status"] {
        case "201":
            return Self.xml(
                "<PostResponse><Location>\(location.xmlEscaped)</Location><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><ETag>\(etag.xmlEscaped)</ETag></PostResponse>",
                status: 201)
        case "200": return HTTPServerResponse(status: 200, headers: [("ETag", etag), ("Location", location)])
        default: return HTTPServerResponse(status: 204, headers: [("ETag", etag), ("Location", location)])
        }
    }
}
