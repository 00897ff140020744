// buckia-bench runs on a Mac or Linux; on iOS and tvOS it is an empty program (Package.swift).
#if os(macOS) || os(Linux)
import Foundation

// buckia-bench: measures Buckia against the limits in the same run. Build in release mode:
//   swift run -c release buckia-bench engines [--sizes 1000,10000,100000] [--repeat 3]
let status = await BenchCommand.main(Array(CommandLine.arguments.dropFirst()))
exit(status)
#endif
