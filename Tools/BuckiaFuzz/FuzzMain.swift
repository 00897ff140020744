// On iOS and tvOS this program does nothing: fuzzing runs on a Mac or Linux (Package.swift).
#if os(macOS) || os(Linux)
import BuckiaFuzzTargets
import CLinux
#endif
import Foundation

/// `buckia-fuzz`: Buckia's parsers of outside input under a fuzzer (`Tools/fuzz/fuzz`).
///
/// Built as usual, it replays inputs: `buckia-fuzz TARGET FILE|FOLDER...` runs every file
/// through the target and says how many it ran, so a crash a fuzzer found can be looked at
/// without the fuzzer's build. Built with `-sanitize=fuzzer,address -DBUCKIA_FUZZ`, it is a
/// libFuzzer binary for the target named by `BUCKIA_FUZZ_TARGET`, taking libFuzzer's options.
@main
struct FuzzMain {
    static func main() {
        #if !(os(macOS) || os(Linux))
        return
        #elseif BUCKIA_FUZZ
        guard let name = ProcessInfo.processInfo.environment["BUCKIA_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("Set BUCKIA_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")).\n".utf8))
            exit(2)
        }
        selected = target
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in
            do {
                try selected?.run(bytes.map { Data(bytes: $0, count: count) } ?? Data())
            } catch {
                // A broken law, or a target that cannot be set up: libFuzzer keeps an input (and
                // stops) only when the process dies, so this is the one place a finding aborts.
                FileHandle.standardError.write(Data("buckia-fuzz: \(error)\n".utf8))
                abort()
            }
            return 0
        })
        #else
        var arguments = CommandLine.arguments.dropFirst()
        let verbose = arguments.first == "--verbose"
        if verbose { arguments = arguments.dropFirst() }
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count >= 2 else {
            print("usage: buckia-fuzz [--verbose] TARGET FILE|FOLDER...   (targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")))")
            exit(2)
        }
        var count = 0
        for path in arguments.dropFirst() {
            let url = URL(fileURLWithPath: path)
            let files: [URL]
            do {
                let values = try url.resourceValues(forKeys: [.isDirectoryKey])
                files = values.isDirectory == true ? try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil).sorted { $0.path < $1.path } : [url]
                for file in files {
                    let data = try Data(contentsOf: file)
                    do {
                        let refusal = try target.run(data)
                        if verbose { print("\(file.lastPathComponent): \(refusal.map { "refused: \($0)" } ?? "accepted")") }
                    } catch {
                        print("buckia-fuzz: \(file.path): \(error)")
                        exit(1)
                    }
                    count += 1
                }
            } catch {
                print("buckia-fuzz: \(path) could not be read: \(error)")
                exit(1)
            }
        }
        print("\(count) inputs of \(target.rawValue) replayed, none crashed")
        #endif
    }
}

#if BUCKIA_FUZZ
/// The target the fuzzer's callback runs: set once, before fuzzing starts.
nonisolated(unsafe) private var selected: FuzzTarget?
#endif
