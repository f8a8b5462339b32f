public import Crypto
public import Foundation

/// What archives' sealed values open with: the nodes of the key tree the database keeps
/// (`ArchiveKeyTree`) and its devices' keys by reference, an erased device's known without its
/// key. A ring read for some leaves only (an activity's audit) knows nothing of the others.
public struct ArchiveKeyRing: Sendable {
    public enum Lookup: Equatable, Sendable {
        case key(SymmetricKey)
        /// Destroyed by an erasure (its leaf punctured, or its device's key): what it sealed is gone.
        case erased
        /// Not a key this ring can derive: a device the database never referenced, or a leaf it
        /// was not read for.
        case unknown
    }

    /// The tree's nodes, by start: all of them, or, for each leaf read for, the node with the
    /// greatest start not after it and the one after (a ring without nodes has no tree: the
    /// database has made no key yet).
    private let nodes: [ArchiveKeyTree.Node]
    /// The leaves the nodes were read for; `nil` when they are the whole tree.
    private let leaves: Set<UInt64>?
    private let devices: [UUID: [UInt8]?]

    /// A ring of `nodes` (read for `leaves` alone, or the whole tree when `nil`) and the keys
    /// of `devices`, `nil` for an erased one.
    public init(nodes: [ArchiveKeyTree.Node] = [], leaves: Set<UInt64>? = nil, devices: [UUID: [UInt8]?] = [:]) {
        self.nodes = nodes.sorted { $0.start < $1.start }
        self.leaves = leaves
        self.devices = devices
    }

    /// The key `leaf`'s values were sealed under with `device`'s key (none when its device was
    /// not known).
    public func lookup(leaf: UInt64, device: UUID?) -> Lookup {
        guard leaves?.contains(leaf) ?? true else { return .unknown }
        var deviceKey: [UInt8]?
        if let device {
            switch devices[device] {
            case nil: return .unknown
            case .some(nil): return .erased
            case .some(let key?): deviceKey = key
            }
        }
        guard !nodes.isEmpty else { return .unknown }
        guard let node = covering(leaf) else { return .erased }
        return .key(ArchiveKeyTree.sealingKey(leaf: ArchiveKeyTree.key(of: leaf, from: node), device: deviceKey))
    }

    /// Whether an erasure reached the activity: its leaf punctured (for a ring read for it).
    public func wasErased(app: String, activity: String) -> Bool {
        let leaf = ArchiveKeyTree.leaf(app: app, activity: activity)
        return (leaves?.contains(leaf) ?? true) && !nodes.isEmpty && covering(leaf) == nil
    }

    /// Whether an erasure of the device destroyed its key.
    public func wasErased(device: UUID) -> Bool {
        devices[device] == .some(nil)
    }

    /// The node that covers `leaf`: the one with the greatest start not after it, when it reaches it.
    private func covering(_ leaf: UInt64) -> ArchiveKeyTree.Node? {
        var low = 0
        var high = nodes.count
        while low < high {
            let middle = (low + high) / 2
            if nodes[middle].start <= leaf { low = middle + 1 } else { high = middle }
        }
        guard low > 0, nodes[low - 1].covers(leaf) else { return nil }
        return nodes[low - 1]
    }
}
