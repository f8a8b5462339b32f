import Foundation
import Testing

/// The README is where a newcomer starts: what it says of the code must stay true.
@Suite("The README describes the package as it is")
struct ReadmeTests {
    @Test("the module table lists every target of Package.swift but the tests, and no other")
    func theModuleTableListsEveryTarget() throws {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let manifest = try String(contentsOf: root.appending(path: "Package.swift"), encoding: .utf8)
        let targets = manifest.matches(of: #/\.(?:target|executableTarget|systemLibrary)\(\s*name:\s*"(\w+)"/#)
            .map { String($0.1) }
        let readme = try String(contentsOf: root.appending(path: "README.md"), encoding: .utf8)
        let table = readme.split(separator: "\n").drop { !$0.hasPrefix("| module | one job |") }.dropFirst(2)
            .prefix { $0.hasPrefix("|") }
        let rows = table.compactMap { $0.firstMatch(of: #/^\| `(\w+)` \|/#).map { String($0.1) } }
        #expect(targets.count > 10, "no targets read from Package.swift")
        #expect(
            Set(rows) == Set(targets),
            "in the README only: \(Set(rows).subtracting(targets).sorted()); in Package.swift only: \(Set(targets).subtracting(rows).sorted())"
        )
        #expect(rows.count == Set(rows).count, "a module listed twice")
    }
}
