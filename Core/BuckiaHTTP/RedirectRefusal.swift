import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session delegate of every ``HTTPClient``: it refuses HTTP redirects, so a 3xx comes
/// back as the response.
///
/// Following them is unsafe for a storage transport: FoundationNetworking re-sends every
/// header of the original request, `Authorization` included, to whatever host the `Location`
/// names, and it drops the body of a redirected upload. Storage APIs answer a wrong endpoint
/// or region with a redirect; surfacing it (see ``HTTPFailure/buckiaError()``) is the useful
/// behaviour.
///
/// `Sendable` without a lock: the class has no stored state, so sharing it between the
/// session's delegate queue and the tasks that create requests is safe.
final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
