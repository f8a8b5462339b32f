public import Crypto
import Foundation

/// The tree the keys of archived activities are derived from (a GGM tree; docs/decisions/0040):
/// each node's key derives its two children's, and each activity has a leaf, placed by a hash of
/// its app and id. The database keeps a set of nodes whose leaves do not overlap — at first the
/// root alone — and nothing per activity. An erasure punctures the tree at the activity's leaf:
/// the node that covers it is replaced by the nodes beside the leaf's path below it, which derive
/// every other leaf of that node and not this one. A punctured leaf's key can be derived from
/// nothing the database keeps.
public enum ArchiveKeyTree {
    /// How many levels the tree has below the root: leaves are 48-bit numbers. Two activities
    /// share a leaf with a chance of one in 2⁴⁸ (and an erasure of one erases the other's archived
    /// values: more is erased, never less).
    public static let depth = 48

    /// A node the database keeps: the leaves from `start` on, `2^(depth − level)` of them.
    public struct Node: Sendable, Equatable {
        public let start: UInt64
        public let level: Int
        public let key: [UInt8]

        public init(start: UInt64, level: Int, key: [UInt8]) {
            self.start = start
            self.level = level
            self.key = key
        }

        /// How many leaves it covers.
        public var span: UInt64 { 1 << UInt64(ArchiveKeyTree.depth - level) }

        public func covers(_ leaf: UInt64) -> Bool { leaf >= start && leaf - start < span }

        /// Whether it is a node of the tree: its level in range, its start aligned to its span,
        /// its key 32 bytes.
        public var isWellFormed: Bool {
            (0...ArchiveKeyTree.depth).contains(level) && start % span == 0 && start < 1 << UInt64(ArchiveKeyTree.depth)
                && key.count == 32
        }
    }

    /// A new tree's root, with a random key.
    public static func newRoot() -> Node {
        Node(start: 0, level: 0, key: SymmetricKey(size: .bits256).withUnsafeBytes { [UInt8]($0) })
    }

    /// The leaf of an activity: the first 48 bits of a SHA-256 of its app and id.
    public static func leaf(app: String, activity: String) -> UInt64 {
        var hash = SHA256()
        hash.update(data: Array("liveline.archive.leaf\u{0}\(app)\u{0}\(activity)".utf8))
        return hash.finalize().prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } >> UInt64(64 - depth)
    }

    /// The key of `leaf`, derived from `node`, which covers it.
    public static func key(of leaf: UInt64, from node: Node) -> [UInt8] {
        precondition(node.covers(leaf), "a node derives only the leaves it covers")
        var key = node.key
        for level in node.level..<depth {
            key = child(of: key, bit: UInt8(truncatingIfNeeded: leaf >> UInt64(depth - level - 1) & 1))
        }
        return key
    }

    /// The nodes that replace `node` when `leaf`, which it covers, is punctured: beside the
    /// leaf's path, one a level, from the level below `node`'s to the leaves'.
    public static func puncture(_ leaf: UInt64, in node: Node) -> [Node] {
        precondition(node.covers(leaf), "a node is punctured only at a leaf it covers")
        var siblings: [Node] = []
        var key = node.key
        var start = node.start
        for level in node.level..<depth {
            let half = UInt64(1) << UInt64(depth - level - 1)
            let bit: UInt8 = leaf - start >= half ? 1 : 0
            let sibling = bit == 1 ? start : start + half
            siblings.append(Node(start: sibling, level: level + 1, key: child(of: key, bit: 1 - bit)))
            key = child(of: key, bit: bit)
            if bit == 1 { start += half }
        }
        return siblings
    }

    /// The key an archived activity's values are sealed under: its leaf's key with its device's
    /// key (`nil` when its device was not known), so that destroying either destroys it.
    public static func sealingKey(leaf: [UInt8], device: [UInt8]?) -> SymmetricKey {
        let code = HMAC<SHA256>.authenticationCode(
            for: Array("liveline.archive.data".utf8) + (device ?? []),
            using: SymmetricKey(data: leaf)
        )
        return SymmetricKey(data: Array(code))
    }

    /// A child's key: SHA-256 of its parent's and which child it is.
    private static func child(of key: [UInt8], bit: UInt8) -> [UInt8] {
        var hash = SHA256()
        hash.update(data: key)
        hash.update(data: [bit])
        return Array(hash.finalize())
    }
}
