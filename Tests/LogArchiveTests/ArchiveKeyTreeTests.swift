import Foundation
import LogArchive
import PropertyBased
import PropertyChecks
import Testing

@Suite("The key tree archived activities' keys derive from")
struct ArchiveKeyTreeTests {
    static let leaves = UInt64(1) << UInt64(ArchiveKeyTree.depth)

    /// The node of `nodes` that covers `leaf`, when one does; and whether more than one does.
    static func covering(_ leaf: UInt64, in nodes: [ArchiveKeyTree.Node]) -> (node: ArchiveKeyTree.Node?, overlap: Bool)
    {
        let found = nodes.filter { $0.covers(leaf) }
        return (found.first, found.count > 1)
    }

    @Test(
        "punctured at any leaves, in any order, the tree derives every other leaf's key as its root did and no punctured one, with at most one node a level per puncture"
    )
    func puncturing() async {
        // Leaves spread over the tree, and leaves beside one another (sharing most of a path).
        let leaf = zip(Gen.bool(), Gen.uint64(), Gen.int(in: 0...7)).map { spread, random, offset in
            spread ? random % Self.leaves : UInt64(0xABC_DEF0_1230) + UInt64(offset)
        }
        await checkProperty(count: 200, input: leaf.array(of: 1...6), leaf.array(of: 1...6)) { punctured, others in
            let root = ArchiveKeyTree.newRoot()
            var nodes = [root]
            for leaf in punctured {
                guard let index = nodes.firstIndex(where: { $0.covers(leaf) }) else { continue }
                let replacement = ArchiveKeyTree.puncture(leaf, in: nodes[index])
                #expect(replacement.count == ArchiveKeyTree.depth - nodes[index].level)
                #expect(replacement.allSatisfy { $0.isWellFormed })
                nodes.remove(at: index)
                nodes += replacement
            }
            for leaf in punctured {
                #expect(Self.covering(leaf, in: nodes).node == nil, "leaf \(leaf) is punctured")
            }
            let kept = Set(punctured)
            for leaf in others + punctured.flatMap({ [$0 &+ 1, $0 &- 1] })
            where leaf < Self.leaves && !kept.contains(leaf) {
                let (node, overlap) = Self.covering(leaf, in: nodes)
                #expect(!overlap)
                let found = try #require(node, "leaf \(leaf) is still derived")
                #expect(ArchiveKeyTree.key(of: leaf, from: found) == ArchiveKeyTree.key(of: leaf, from: root))
            }
        }
    }

    @Test("an activity's leaf is the same each time, within the tree, and another activity's or app's is another")
    func leaves() {
        let leaf = ArchiveKeyTree.leaf(app: "app", activity: "ride-1")
        #expect(leaf == ArchiveKeyTree.leaf(app: "app", activity: "ride-1"))
        #expect(leaf < Self.leaves)
        #expect(leaf != ArchiveKeyTree.leaf(app: "app", activity: "ride-2"))
        #expect(leaf != ArchiveKeyTree.leaf(app: "app2", activity: "ride-1"))
        // The separator keeps the app and the id apart.
        #expect(ArchiveKeyTree.leaf(app: "ab", activity: "c") != ArchiveKeyTree.leaf(app: "a", activity: "bc"))
    }

    @Test("two trees, two leaves, or a leaf with and without its device's key: each a key of its own")
    func keysDiffer() {
        let (one, two) = (ArchiveKeyTree.newRoot(), ArchiveKeyTree.newRoot())
        #expect(ArchiveKeyTree.key(of: 5, from: one) != ArchiveKeyTree.key(of: 5, from: two))
        #expect(ArchiveKeyTree.key(of: 5, from: one) != ArchiveKeyTree.key(of: 6, from: one))
        let leaf = ArchiveKeyTree.key(of: 5, from: one)
        let device = [UInt8](repeating: 3, count: 32)
        #expect(
            ArchiveKeyTree.sealingKey(leaf: leaf, device: nil) != ArchiveKeyTree.sealingKey(leaf: leaf, device: device)
        )
        #expect(
            ArchiveKeyTree.sealingKey(leaf: leaf, device: device)
                == ArchiveKeyTree.sealingKey(leaf: leaf, device: device)
        )
    }

    @Test(
        "a ring derives a leaf's key from the node covering it; punctured, or its device's key erased, it is erased; a device or leaf it was not read for is unknown"
    )
    func ring() {
        let root = ArchiveKeyTree.newRoot()
        let (leaf, other) = (UInt64(77), UInt64(78))
        let device = UUID()
        let deviceKey = [UInt8](repeating: 1, count: 32)
        let expected = ArchiveKeyTree.sealingKey(leaf: ArchiveKeyTree.key(of: leaf, from: root), device: deviceKey)
        let whole = ArchiveKeyRing(nodes: [root], devices: [device: deviceKey])
        #expect(whole.lookup(leaf: leaf, device: device) == .key(expected))
        #expect(whole.lookup(leaf: leaf, device: UUID()) == .unknown)
        #expect(ArchiveKeyRing(nodes: [root], devices: [device: nil]).lookup(leaf: leaf, device: device) == .erased)
        #expect(ArchiveKeyRing(devices: [device: deviceKey]).lookup(leaf: leaf, device: device) == .unknown)
        let punctured = ArchiveKeyRing(nodes: ArchiveKeyTree.puncture(leaf, in: root), devices: [device: deviceKey])
        #expect(punctured.lookup(leaf: leaf, device: device) == .erased)
        #expect(punctured.lookup(leaf: other, device: nil) == whole.lookup(leaf: other, device: nil))
        let readForOne = ArchiveKeyRing(nodes: [root], leaves: [leaf], devices: [device: deviceKey])
        #expect(readForOne.lookup(leaf: leaf, device: device) == .key(expected))
        #expect(readForOne.lookup(leaf: other, device: device) == .unknown)
    }
}
