public import ActivityLifecycle
import Foundation
import Postgres

/// The `data` of each event type (documented in docs/event-log.md), to and from JSON.
enum EventData {
    static func encode(_ payload: EventPayload) -> JSONB {
        let encoder = JSONEncoder()
        let data: Data? =
            switch payload {
            case .requested(let requested): try? encoder.encode(requested)
            case .updated(let updated): try? encoder.encode(updated)
            case .ended(let ended): try? encoder.encode(ended)
            case .dismissed(let dismissed): try? encoder.encode(dismissed)
            case .pushTokenChanged(let changed): try? encoder.encode(changed)
            case .started, .becameStale: nil
            }
        // Encoding these plain values cannot fail; an empty object stands for "no data".
        return JSONB(utf8: data.map(Array.init) ?? Array("{}".utf8))
    }

    static func decode(type: String, data: JSONB) throws -> EventPayload {
        guard let type = EventType(rawValue: type) else {
            throw EventStoreError.unreadableRow("unknown event type \(type)")
        }
        let decoder = JSONValueDecoder()
        do {
            let value = try JSONParser.parse(data.utf8)
            switch type {
            case .requested: return .requested(try decoder.decode(EventPayload.Requested.self, from: value))
            case .started: return .started
            case .updated: return .updated(try decoder.decode(EventPayload.Updated.self, from: value))
            case .becameStale: return .becameStale
            case .ended: return .ended(try decoder.decode(EventPayload.Ended.self, from: value))
            case .dismissed: return .dismissed(try decoder.decode(EventPayload.Dismissed.self, from: value))
            case .pushTokenChanged:
                return .pushTokenChanged(try decoder.decode(EventPayload.PushTokenChanged.self, from: value))
            }
        } catch {
            throw EventStoreError.unreadableRow("data of \(type.rawValue): \(error)")
        }
    }

}

extension StoredEvent {
    /// The event's `data` as stored in the log's `data` column (docs/event-log.md).
    public var data: JSONObject {
        // `encode` writes an object of plain values, which always parses.
        try! JSONParser.parseObject(EventData.encode(event.payload).utf8)
    }
}
