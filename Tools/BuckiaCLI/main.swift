// On iOS and tvOS this program is empty: a command line makes no sense there (Package.swift).
#if os(macOS) || os(Linux)
import BuckiaCommandLine

// The shipped `buckia`: the command line over every built-in provider and engine. A package
// with plugins of its own makes its own executable the same way, naming them
// (Docs/WritingAProvider.md, "Your own buckia").
BuckiaCommandLine.main()
#endif
