import LogArchive
import Postgres
import PropertyBased
import PropertyChecks
import TestSupport
import Testing

@testable import EventStore

/// The key tree as the database keeps it (`archive_key_nodes`): punctured through the store's SQL
/// and read back as `verify` and the copy read it.
@Suite("The key tree in the database")
struct ArchiveKeyNodesTests {
    static let lastLeaf = (UInt64(1) << UInt64(ArchiveKeyTree.depth)) - 1

    @Test(
        "punctured at any leaves, the edges of the tree's range among them, the nodes read back derive every other leaf's key as the root did and no punctured one"
    )
    func punctures() async throws {
        let database = try await TestDatabase.makeMigrated()
        let leaf = zip(Gen.int(in: 0...3), Gen.uint64(), Gen.int(in: 0...3)).map { kind, random, offset -> UInt64 in
            switch kind {
            case 0: UInt64(offset)
            case 1: Self.lastLeaf - UInt64(offset)
            case 2: UInt64(0x8000_0000_0000) + UInt64(offset)
            default: random & Self.lastLeaf
            }
        }
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            await checkProperty(count: 40, input: leaf.array(of: 1...5), leaf.array(of: 1...5)) { punctured, others in
                let (before, after, nearest) = try await pool.withConnection { connection in
                    try connection.execute("BEGIN")
                    defer { _ = try? connection.execute("ROLLBACK") }
                    try connection.execute("DELETE FROM archive_key_nodes")
                    try ArchiveKeyQueries.puncture([], connection)
                    let before = try ArchiveKeyQueries.keyRing(of: nil, devices: [], connection)
                    try ArchiveKeyQueries.puncture(punctured + punctured, connection)
                    let after = try ArchiveKeyQueries.keyRing(of: nil, devices: [], connection)
                    let nearest = try (punctured + others).map { leaf in
                        ArchiveKeyRing(
                            nodes: try ArchiveKeyQueries.nearestNodes(of: [leaf], connection),
                            leaves: [leaf]
                        )
                    }
                    return (before, after, nearest)
                }
                for (index, leaf) in (punctured + others).enumerated() {
                    let expected = punctured.contains(leaf) ? .erased : before.lookup(leaf: leaf, device: nil)
                    #expect(after.lookup(leaf: leaf, device: nil) == expected, "leaf \(leaf)")
                    // What an audit reads: the nodes next to the leaf alone.
                    #expect(nearest[index].lookup(leaf: leaf, device: nil) == expected, "leaf \(leaf) alone")
                }
            }
        }
    }
}
