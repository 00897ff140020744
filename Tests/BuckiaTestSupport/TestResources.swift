import BuckiaCore
import BuckiaHTTP
import Foundation

extension SharedResources {
    /// What the HTTP and S3 tests build their clients and providers with: the libcurl
    /// transport, or URLSession when `BUCKIA_HTTP_TRANSPORT=urlsession` (Tools/test's second
    /// pass). The test process reads the variable; the library never does.
    public static let tests: SharedResources = {
        let resources = SharedResources()
        if HTTPClient.TransportKind.privateForTests == .urlSession {
            // A fresh value: nothing was made yet, so the only way this fails is a programming error.
            do {
                try resources.provide(
                    SharedHTTPTransport.self, URLSessionTransport(maximumConnectionsPerHost: SharedHTTPTransport.maximumConnectionsPerHost))
            } catch {
                fatalError("The test transport could not be chosen: \(error)")
            }
        }
        return resources
    }()
}

extension HTTPClient.TransportKind {
    /// A private transport of the kind the tests run over (libcurl, or URLSession in Tools/test's
    /// second pass): for a test that needs connections no other test has touched.
    /// The portable build has no libcurl, so there it is always URLSession.
    public static let privateForTests: HTTPClient.TransportKind =
        ProcessInfo.processInfo.environment["BUCKIA_HTTP_TRANSPORT"]?.lowercased() == "urlsession" || !libcurlIsBuilt ? .urlSession : .libcurl

    /// Whether this build has the libcurl transport (not the portable build): the condition of
    /// the tests of what only libcurl does.
    public static let libcurlIsBuilt = privateKinds.contains(.libcurl)
}
