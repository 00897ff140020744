import BuckiaCore
import BuckiaTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finding the interpreter and the script, and reading the server's startup line.
extension MotoServer {
    static func scriptURL() throws -> URL {
        if let url = Bundle.module.url(forResource: "moto_server", withExtension: "py", subdirectory: "Resources") {
            return url
        }
        throw BuckiaError(.notFound, "moto_server.py is missing from the BuckiaS3Tests bundle.")
    }
}
