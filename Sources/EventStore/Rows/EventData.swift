import ActivityLifecycle
public import CanonicalJSON
import Postgres

/// The `data` of each event type (documented in docs/event-log.md), to and from JSON. Written
/// by hand rather than through `Codable`: every append writes it and every replay reads it, so
/// the members go straight to and from their bytes, and the app's objects (`attributes`,
/// `contentState`) stay in their canonical bytes throughout. Optional members are left out when
/// absent.
enum EventData {
    static func encode(_ payload: EventPayload) -> JSONB {
        JSONB(utf8: writer(of: payload).json)
    }

    static func writer(of payload: EventPayload) -> JSONObjectWriter {
        var data = JSONObjectWriter()
        switch payload {
        case .requested(let requested):
            data.add("activityType", .string(requested.activityType))
            data.add("attributes", requested.attributes)
            data.add("content", content(requested.content))
            data.add("startDate", requested.startDate.map(time))
            data.add("pushType", requested.pushType.map { .string($0.rawValue) })
            data.add("style", requested.style.map { .string($0.rawValue) })
            data.add("deviceId", requested.deviceID.map { .string($0.rawValue) })
            data.add("timestamp", requested.timestamp.map(time))
            data.add(
                "remoteStart",
                requested.remoteStart.map { remoteStart in
                    var members = JSONObjectWriter()
                    members.add("pushToStartToken", remoteStart.pushToStartToken.map(JSONValue.string))
                    members.add("alert", alert(remoteStart.alert))
                    return members
                }
            )
            data.add(
                "channel",
                requested.channel.map { channel in
                    var members = JSONObjectWriter()
                    members.add("id", .string(channel.id))
                    members.add("messageStoragePolicy", channel.storagePolicy.map { .string($0.rawValue) })
                    return members
                }
            )
        case .updated(let updated):
            data.add("content", content(updated.content))
            data.add("alert", updated.alert.map(alert))
            data.add("priority", .number(JSONNumber(updated.priority.rawValue)))
            // Present only when the budget lowered the priority, as the other optional members.
            data.add("downgraded", updated.downgraded ? .bool(true) : nil)
            data.add("timestamp", updated.timestamp.map(time))
            data.add("widgetReload", updated.widgetReload.map(widgetReload))
        case .ended(let ended):
            data.add("reason", .string(ended.reason.rawValue))
            data.add("content", ended.content.map(content))
            data.add("dismissalPolicy", .string(ended.dismissalPolicy.rawValue))
            data.add("dismissalDate", time(ended.dismissalDate))
            data.add("timestamp", ended.timestamp.map(time))
            data.add("widgetReload", ended.widgetReload.map(widgetReload))
        case .dismissed(let dismissed):
            data.add("reason", .string(dismissed.reason.rawValue))
        case .pushTokenChanged(let changed):
            data.add("pushToken", .string(changed.pushToken))
        case .startUnconfirmed(let flag):
            data.add("pushToStartToken", .string(flag.pushToStartToken))
            data.add("acceptedAt", time(flag.acceptedAt))
            data.add("tokenDueBy", time(flag.tokenDueBy))
            data.add("unconfirmedInARow", .number(JSONNumber(flag.unconfirmedInARow)))
            data.add("tokenSuspect", .bool(flag.tokenSuspect))
        case .started, .becameStale:
            break
        }
        return data
    }

    private static func content(_ content: ActivityContent) -> JSONObjectWriter {
        var members = JSONObjectWriter()
        members.add("contentState", content.contentState)
        members.add("staleDate", content.staleDate.map(time))
        members.add("relevanceScore", content.relevanceScore.map { .number(JSONNumber($0.value)) })
        return members
    }

    private static func alert(_ alert: Alert) -> JSONValue {
        var members: [String: JSONValue] = ["title": .string(alert.title), "body": .string(alert.body)]
        members["sound"] = alert.sound.map(JSONValue.string)
        return .object(members)
    }

    private static func time(_ timestamp: Timestamp) -> JSONValue { .string(timestamp.description) }

    /// `{"widgetKinds": […]}`, or `{}` for every widget.
    private static func widgetReload(_ reload: WidgetReload) -> JSONObjectWriter {
        var members = JSONObjectWriter()
        members.add("widgetKinds", reload.widgetKinds.map { .array($0.map(JSONValue.string)) })
        return members
    }

    static func decode(type: EventType, data: JSONB) throws -> EventPayload {
        do {
            let bytes = data.utf8
            return try payload(
                type,
                try DataMember(bytes: bytes, parent: nil, key: "data", value: bytes.indices).object()
            )
        } catch {
            throw EventStoreError.unreadableRow("data of \(type.rawValue): \(error)")
        }
    }

    private static func payload(_ type: EventType, _ data: DataObject) throws -> EventPayload {
        switch type {
        case .requested:
            return .requested(
                EventPayload.Requested(
                    Command.Request(
                        activityType: try data["activityType"].string(),
                        attributes: try data["attributes"].jsonObject(),
                        content: try content(data["content"].object()),
                        startDate: try data["startDate"].ifPresent { try $0.timestamp() },
                        pushType: try data["pushType"].ifPresent { try $0.oneOf(PushType.self) },
                        style: try data["style"].ifPresent { try $0.oneOf(ActivityStyle.self) },
                        deviceID: try data["deviceId"].ifPresent { try $0.oneOf(DeviceID.self) },
                        timestamp: try data["timestamp"].ifPresent { try $0.timestamp() },
                        remoteStart: try data["remoteStart"].ifPresent { member in
                            let remoteStart = try member.object()
                            return RemoteStart(
                                pushToStartToken: try remoteStart["pushToStartToken"].string(),
                                alert: try alert(remoteStart["alert"].object())
                            )
                        },
                        channel: try data["channel"].ifPresent { member in
                            let channel = try member.object()
                            return BroadcastChannel(
                                id: try channel["id"].string(),
                                storagePolicy: try channel["messageStoragePolicy"].oneOf(MessageStoragePolicy.self)
                            )
                        }
                    )
                )
            )
        case .started:
            return .started
        case .updated:
            return .updated(
                EventPayload.Updated(
                    content: try content(data["content"].object()),
                    alert: try data["alert"].ifPresent { try alert($0.object()) },
                    priority: try data["priority"].oneOf(Priority.self),
                    downgraded: try data["downgraded"].ifPresent { try $0.bool() } ?? false,
                    timestamp: try data["timestamp"].ifPresent { try $0.timestamp() },
                    widgetReload: try data["widgetReload"].ifPresent { try widgetReload($0.object()) }
                )
            )
        case .becameStale:
            return .becameStale
        case .ended:
            return .ended(
                EventPayload.Ended(
                    reason: try data["reason"].oneOf(EndReason.self),
                    content: try data["content"].ifPresent { try content($0.object()) },
                    dismissalPolicy: try data["dismissalPolicy"].oneOf(DismissalPolicyName.self),
                    dismissalDate: try data["dismissalDate"].timestamp(),
                    timestamp: try data["timestamp"].ifPresent { try $0.timestamp() },
                    widgetReload: try data["widgetReload"].ifPresent { try widgetReload($0.object()) }
                )
            )
        case .dismissed:
            return .dismissed(EventPayload.Dismissed(reason: try data["reason"].oneOf(DismissalReason.self)))
        case .pushTokenChanged:
            return .pushTokenChanged(EventPayload.PushTokenChanged(pushToken: try data["pushToken"].string()))
        case .startUnconfirmed:
            return .startUnconfirmed(
                UnconfirmedStart(
                    pushToStartToken: try data["pushToStartToken"].string(),
                    acceptedAt: try data["acceptedAt"].timestamp(),
                    tokenDueBy: try data["tokenDueBy"].timestamp(),
                    unconfirmedInARow: try data["unconfirmedInARow"].count(),
                    tokenSuspect: try data["tokenSuspect"].bool()
                )
            )
        }
    }

    private static func widgetReload(_ reload: DataObject) throws -> WidgetReload {
        WidgetReload(widgetKinds: try reload["widgetKinds"].ifPresent { try $0.strings() })
    }

    private static func alert(_ alert: DataObject) throws -> Alert {
        Alert(
            title: try alert["title"].string(),
            body: try alert["body"].string(),
            sound: try alert["sound"].ifPresent { try $0.string() }
        )
    }

    private static func content(_ content: DataObject) throws -> ActivityContent {
        ActivityContent(
            contentState: try content["contentState"].jsonObject(),
            staleDate: try content["staleDate"].ifPresent { try $0.timestamp() },
            relevanceScore: try content["relevanceScore"].ifPresent { member in
                guard let score = RelevanceScore(try member.number()) else { throw member.wrong("a number ≥ 0") }
                return score
            }
        )
    }
}

extension StoredEvent {
    /// The event's `data` as stored in the log's `data` column (docs/event-log.md).
    public var data: JSONObject { EventData.writer(of: event.payload).object }
}

/// Something wrong in a stored event's `data`: which member, and what.
struct EventDataError: Error, CustomStringConvertible {
    let path: String
    let problem: String

    var description: String { "\(path) \(problem)" }
}

/// The members of an object in an event's `data`, each read only when asked for: a reader
/// parses the members it needs, not a tree of the whole document.
struct DataObject {
    let bytes: [UInt8]
    let path: String
    let members: [JSONParser.Member]

    /// A member; absent and `null` read the same.
    subscript(key: StaticString) -> DataMember {
        let value = members.first { $0.hasKey(key, in: bytes) }?.value
        let isNull = value.map { bytes[$0.lowerBound] == UInt8(ascii: "n") } ?? true
        return DataMember(bytes: bytes, parent: path, key: key, value: isNull ? nil : value)
    }
}

/// One member of an event's `data`, read strictly: missing or of the wrong kind is an error
/// that names it.
struct DataMember {
    let bytes: [UInt8]
    /// Where it is (`data.content`), put together only for an error or a nested object.
    let parent: String?
    let key: StaticString
    /// Where its value lies in `bytes`; `nil` when it is absent or `null`.
    let value: Range<Int>?

    var path: String { parent.map { "\($0).\(key)" } ?? "\(key)" }

    func wrong(_ expected: String) -> EventDataError {
        EventDataError(path: path, problem: value == nil ? "is missing" : "is not \(expected)")
    }

    func ifPresent<T>(_ read: (DataMember) throws -> T) throws -> T? {
        value == nil ? nil : try read(self)
    }

    /// The value, parsed; `nil` when absent.
    private func parsed() throws -> JSONValue? {
        try value.map { try JSONParser.parse(bytes, in: $0) }
    }

    func string() throws -> String {
        guard case .string(let string) = try parsed() else { throw wrong("a string") }
        return string
    }

    func strings() throws -> [String] {
        guard case .array(let values) = try parsed() else { throw wrong("an array of strings") }
        return try values.map { value in
            guard case .string(let string) = value else { throw wrong("an array of strings") }
            return string
        }
    }

    func number() throws -> Double {
        guard case .number(let number) = try parsed() else { throw wrong("a number") }
        return number.double
    }

    /// A whole number ≥ 0.
    func count() throws -> Int {
        guard let count = Int(exactly: try number()), count >= 0 else { throw wrong("a whole number ≥ 0") }
        return count
    }

    func bool() throws -> Bool {
        guard case .bool(let bool) = try parsed() else { throw wrong("true or false") }
        return bool
    }

    /// Its members, each parsed only when read.
    func object() throws -> DataObject {
        // The parser would refuse another kind too, but with its own words rather than the path.
        guard let value = objectValue else { throw wrong("an object") }
        return DataObject(bytes: bytes, path: path, members: try JSONParser.members(of: bytes, in: value))
    }

    /// An object the app gave (`attributes`, `contentState`), in canonical form.
    func jsonObject() throws -> JSONObject {
        guard let value = objectValue else { throw wrong("an object") }
        return try JSONParser.parseObject(bytes, in: value)
    }

    /// Where its value lies, if it is an object.
    private var objectValue: Range<Int>? {
        guard let value, let first = value.first, bytes[first] == UInt8(ascii: "{") else { return nil }
        return value
    }

    func timestamp() throws -> Timestamp {
        guard let timestamp = RFC3339.parse(try string()) else { throw wrong("an RFC 3339 date-time") }
        return timestamp
    }

    /// One of the values of a string-backed type (an enum or an identifier).
    func oneOf<T: RawRepresentable>(_ type: T.Type) throws -> T where T.RawValue == String {
        guard let value = T(rawValue: try string()) else { throw wrong("a valid \(T.self)") }
        return value
    }

    /// One of the values of an integer-backed enum (`Priority`).
    func oneOf<T: RawRepresentable>(_ type: T.Type) throws -> T where T.RawValue == Int {
        let number = try number()
        guard let integer = Int(exactly: number), let value = T(rawValue: integer) else {
            throw wrong("a valid \(T.self)")
        }
        return value
    }
}
