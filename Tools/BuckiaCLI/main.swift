import Buckia
import CLinux
import Foundation

// Before anything opens a file: a closed standard stream must not be reused by one.
StandardStreams.reserve()

// Two malloc arenas instead of glibc's eight per core: with transfers spread over many
// threads, each arena otherwise keeps its freed part buffers resident (about 9 MiB more at
// peak for a 512 MiB multipart upload; see Docs/Benchmarks.md).
_ = buckia_limit_malloc_arenas(2)

// Arguments are decoded as UTF-8 with replacement characters, which would map two different
// names onto one ("coll\xFF" and "coll\xFE" both become "coll\u{FFFD}"): refuse them instead.
for index in 1..<Int(CommandLine.argc) {
    guard let raw = CommandLine.unsafeArgv[index] else { continue }
    let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw))
    if String(validating: bytes, as: UTF8.self) == nil {
        Console.error("buckia: argument \(index) (\(UnaddressableKey(bytes: Array(bytes), reason: "").displayName.debugDescription)) is not valid UTF-8; Buckia names objects and files in UTF-8 only.")
        exit(ExitCode.usage.rawValue)
    }
}

// Interrupted (Ctrl-C, SIGTERM): remove the temporaries in progress, then exit as the signal
// would (130, 143). Parts already on a server stay for a resumed upload.
let interruptions = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler {
        Temporaries.removeAllBeforeExit()
        Console.error("buckia: interrupted; temporary files removed.")
        exit(128 + number)
    }
    source.resume()
    return source
}

let status = await CLI.main(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
withExtendedLifetime(interruptions) {}
exit(status.rawValue)
