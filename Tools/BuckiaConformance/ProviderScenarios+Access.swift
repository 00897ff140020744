import BuckiaCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ProviderConformance {
    static var accessScenarios: [ProviderScenario] {
        [
            ProviderScenario(
                "access: public URL fetches the object", contract: "A public URL returns the object's bytes without credentials.",
                requires: [.publicURL]
            ) { context in
                let data = Data("public bytes".utf8)
                let key = try context.key("public dir/pub lic+1.txt")
                try await context.provider.uploadData(data, remotePath: key, options: UploadOptions())
                let url = try context.provider.getPublicURL(remotePath: key)
                let fetched: Data
                if url.isFileURL {
                    fetched = try Data(contentsOf: url)
                } else {
                    let (body, response) = try await URLSession.shared.data(from: url)
                    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                    try Expect.equal(status, 200, "HTTP status fetching the public URL")
                    fetched = body
                }
                try Expect.sameBytes(fetched, data, "bytes fetched from the public URL")
            },
            ProviderScenario(
                "access: no public URL without the capability", contract: "A provider without public URLs throws unsupported.",
                excludedBy: [.publicURL]
            ) { context in
                try await Expect.error(.unsupported, "getPublicURL") { try context.provider.getPublicURL(remotePath: context.key("x")) }
            },
            ProviderScenario(
                "access: token expiry and redaction", contract: "A generated token expires when asked and never prints its value.",
                requires: [.accessToken]
            ) { context in
                let options = AccessTokenOptions(userId: "user-1", permissions: .readOnly, expiry: .seconds(600), pathPrefix: context.prefix)
                // The expiry is checked against the clock read just before and just after the
                // call (a second either way for providers that keep whole seconds), so a slow
                // machine cannot fail it and a wrong expiry cannot pass.
                let before = Date()
                let token = try await context.provider.generateAccessToken(options: options)
                let after = Date()
                try Expect.that(!token.value.isEmpty, "the token is empty")
                let earliest = before.addingTimeInterval(599), latest = after.addingTimeInterval(601)
                try Expect.that(
                    token.expiresAt >= earliest && token.expiresAt <= latest,
                    "the token expires at \(token.expiresAt), outside 600 s after the call (\(earliest) … \(latest))")
                let printed = "\(token) \(String(reflecting: token)) \(token.value)"
                try Expect.that(!printed.contains(token.value.exposedValue), "the token's value appears in its description")
            },
            ProviderScenario(
                "access: no tokens without the capability", contract: "A provider without tokens throws unsupported.",
                excludedBy: [.accessToken]
            ) { context in
                try await Expect.error(.unsupported, "generateAccessToken") {
                    try await context.provider.generateAccessToken(options: AccessTokenOptions())
                }
            },
        ]
    }
}
