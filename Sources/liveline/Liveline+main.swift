import ArgumentParser
import LivelineCLI

/// The `liveline` executable: everything it does lives in `LivelineCLI`.
@main
extension Liveline {}
