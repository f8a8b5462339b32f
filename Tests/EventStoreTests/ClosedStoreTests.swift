import Foundation
import Testing

/// The store is closed: the modules above it see its vocabulary, never the database's. Only the
/// modules whose job is the database import `Postgres` (and only `Postgres` imports libpq), so
/// that the rule holds by construction rather than by review.
@Suite("Only the store and the database's own modules import Postgres")
struct ClosedStoreTests {
    /// Where `import Postgres` belongs: the wrapper itself, the store (whose SQL is all of
    /// Liveline's: the operators' tools read through it too), the embedded cluster, the tests'
    /// support, and the one file of the commands that wires the process to the database.
    static let mayImportPostgres = [
        "Sources/Postgres/", "Sources/EventStore/", "Sources/EmbeddedPostgres/", "Sources/TestSupport/",
        "Sources/LivelineCLI/CommandEnvironment.swift",
    ]

    @Test("no source file outside the store's side imports Postgres, and only Postgres imports libpq")
    func importsStayInside() throws {
        var strays: [String] = []
        for file in try Self.sourceFiles() {
            for module in try Self.imports(of: file.url) {
                let allowed =
                    switch module {
                    case "Postgres": Self.mayImportPostgres.contains { file.path.hasPrefix($0) }
                    case "CLibPQ": file.path.hasPrefix("Sources/Postgres/")
                    default: true
                    }
                if !allowed { strays.append("\(file.path) imports \(module)") }
            }
        }
        #expect(strays.isEmpty, "\(strays.joined(separator: "\n"))")
    }

    @Test("the import reader finds every form of import a file can write")
    func importsAreRead() throws {
        let text = """
            import Foundation
            public import Postgres
            @preconcurrency internal import CLibPQ
              package import EventStore
            // import NotThis
            let text = "import NorThis"
            """
        let file = FileManager.default.temporaryDirectory.appending(path: "imports-\(UUID().uuidString).swift")
        try text.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try Self.imports(of: file) == ["Foundation", "Postgres", "CLibPQ", "EventStore"])
    }

    /// The modules a Swift file imports, in order.
    static func imports(of file: URL) throws -> [String] {
        let pattern =
            #/^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?(\w+)/#
        return try String(contentsOf: file, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.firstMatch(of: pattern).map { String($0.1) }
        }
    }

    /// Every Swift file under `Sources/`, with its path from the package's root.
    static func sourceFiles() throws -> [(path: String, url: URL)] {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let sources = root.appending(path: "Sources")
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else {
            throw CocoaError(.fileReadNoSuchFile)
        }
        let files = walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(files.count > 100, "the sources were not found under \(sources.path)")
        return files.map { url in
            (String(url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count + 1)), url)
        }
    }
}
