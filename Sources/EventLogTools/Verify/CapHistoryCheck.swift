import ActivityLifecycle
import CanonicalJSON
public import EventStore

/// Replays the open counts in commit order and finds every opening that took a count above the
/// cap in force when it committed: an app's, a device's or the global one.
///
/// A count may be above its cap without a breach: a cap lowered below the open count leaves the
/// open activities open. Only an opening beyond the cap is a breach, which is what the store
/// refuses. Openings committed without a recorded commit time are counted but not checked: their
/// order among concurrent transactions is not known.
public struct CapHistoryCheck: Sendable {
    public struct Outcome: Hashable, Sendable, Encodable {
        /// Openings checked against the caps in force when they committed.
        public var checkedOpenings = 0
        /// Openings committed while the database did not record commit times: counted only.
        public var uncheckedOpenings = 0
        /// Why the history was not checked at all, if it was not.
        public var notChecked: String?

        public init(checkedOpenings: Int = 0, uncheckedOpenings: Int = 0, notChecked: String? = nil) {
            self.checkedOpenings = checkedOpenings
            self.uncheckedOpenings = uncheckedOpenings
            self.notChecked = notChecked
        }
    }

    /// What a count counts: the open activities of an app, of one device of an app, or of all.
    private enum Counted: Hashable {
        case app(AppID)
        case device(AppID, DeviceID)
        case global

        var cap: CapHistoryEntry.Cap {
            switch self {
            case .app(let app): .app(app)
            case .device(let app, _): .perDevice(app)
            case .global: .global
            }
        }

        var subject: String {
            switch self {
            case .app(let app): "app \(app)'s open activities"
            case .device(let app, let device): "the open activities of device \(device) of app \(app)"
            case .global: "the open activities of all apps"
            }
        }
    }

    private struct Limit {
        let value: Int?
        let since: Timestamp?
    }

    private var limits: [CapHistoryEntry.Cap: Limit] = [:]
    private var open: [StreamID: DeviceID?] = [:]
    private var counts: [Counted: Int] = [:]
    public private(set) var findings: [Finding] = []
    public private(set) var outcome = Outcome()

    public init() {}

    public mutating func apply(_ entry: CapHistoryEntry) {
        switch entry.change {
        case .capSet(let cap, let limit):
            limits[cap] = Limit(value: limit, since: entry.committedAt)
        case .opened(let stream, let device):
            guard open.updateValue(device, forKey: stream) == nil else { return }
            if entry.committedAt == nil { outcome.uncheckedOpenings += 1 } else { outcome.checkedOpenings += 1 }
            for counted in Self.counted(stream, device) {
                let count = counts[counted, default: 0] + 1
                counts[counted] = count
                if let committedAt = entry.committedAt, let limit = limits[counted.cap], let value = limit.value,
                    count > value
                {
                    findings.append(
                        breach(of: limit, value, by: stream, committedAt: committedAt, making: count, counted)
                    )
                }
            }
        case .closed(let stream):
            guard let device = open.removeValue(forKey: stream) else { return }
            for counted in Self.counted(stream, device) {
                let count = counts[counted, default: 0] - 1
                counts[counted] = count > 0 ? count : nil
            }
        }
    }

    private static func counted(_ stream: StreamID, _ device: DeviceID?) -> [Counted] {
        [.app(stream.app)] + (device.map { [.device(stream.app, $0)] } ?? []) + [.global]
    }

    private func breach(
        of limit: Limit,
        _ value: Int,
        by stream: StreamID,
        committedAt: Timestamp,
        making count: Int,
        _ counted: Counted
    ) -> Finding {
        let since = limit.since.map { "set at \($0)" } ?? "in force from the start of the log"
        return Finding(
            stream: stream,
            version: 1,
            rule: .cap,
            evidence: "opened at \(committedAt), it made \(counted.subject) \(count), "
                + "above \(counted.cap) of \(value) (\(since))"
        )
    }
}
