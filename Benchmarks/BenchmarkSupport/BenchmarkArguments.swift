public import Foundation

/// A load benchmark's command line: `--name value` options and the migrations folder.
public struct BenchmarkArguments: Sendable {
    private let arguments: [String]

    public init(_ arguments: [String] = CommandLine.arguments) {
        self.arguments = arguments
    }

    /// The whole number given after `name`, or `fallback`.
    public func option(_ name: String, _ fallback: Int) -> Int {
        arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil } ?? fallback
    }

    /// Whether `name` is given.
    public func flag(_ name: String) -> Bool {
        arguments.contains(name)
    }

    /// `--migrations`, or `../migrations` (the scripts run from `Benchmarks/`).
    public var migrations: URL {
        URL(filePath: arguments.firstIndex(of: "--migrations").map { arguments[$0 + 1] } ?? "../migrations")
    }
}
