import CLinux
import Foundation

// Two malloc arenas instead of glibc's eight per core: with transfers spread over many
// threads, each arena otherwise keeps its freed part buffers resident (about 9 MiB more at
// peak for a 512 MiB multipart upload; see Docs/Benchmarks.md).
_ = buckia_limit_malloc_arenas(2)

let status = await CLI.main(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(status.rawValue)
