import ActivityLifecycle
import CanonicalJSON

// Request bodies read with Liveline's own parser, when they are ones that the generated decoder
// reads to the same value: an object of known members, each of the type the document gives it.
// `nil` for anything else (an unknown member, a wrong type, a bad date), which is left to the
// generated decoder: it refuses it, and its refusal says what is wrong.
//
// The bytes are strict JSON already (`StrictJSONBodies`), with no `null` outside free-form
// values and no key twice.

extension Components.Schemas.ActivityRequest {
    /// A request without `remoteStart` or `channelId` (those are the generated decoder's to read).
    init?(ownJSON bytes: [UInt8]) {
        var content = OwnJSON.Content()
        var activityID: ActivityID?
        var activityType: String?
        var attributes: JSONObject?
        var startDate: Timestamp?
        var pushType: PushType?
        var style: ActivityStyle?
        var deviceID: DeviceID?
        let read = OwnJSON.forEachMember(of: bytes, in: bytes.indices) { member in
            if let known = content.read(member, in: bytes) { return known }
            let value = member.value
            if member.hasKey("activityId", in: bytes) {
                activityID = OwnJSON.rawValue(bytes, value)
                return activityID != nil
            }
            if member.hasKey("activityType", in: bytes) {
                activityType = OwnJSON.string(bytes, value)
                return activityType != nil
            }
            if member.hasKey("attributes", in: bytes) {
                attributes = try? JSONParser.parseObject(bytes, in: value)
                return attributes != nil
            }
            if member.hasKey("startDate", in: bytes) {
                startDate = OwnJSON.timestamp(bytes, value)
                return startDate != nil
            }
            if member.hasKey("pushType", in: bytes) {
                pushType = OwnJSON.rawValue(bytes, value)
                return pushType != nil
            }
            if member.hasKey("style", in: bytes) {
                style = OwnJSON.rawValue(bytes, value)
                return style != nil
            }
            if member.hasKey("deviceId", in: bytes) {
                deviceID = OwnJSON.rawValue(bytes, value)
                return deviceID != nil
            }
            return false
        }
        guard read, let activityType, let contentState = content.contentState else { return nil }
        self.init(
            activityId: activityID,
            activityType: activityType,
            attributes: attributes,
            contentState: contentState,
            staleDate: content.staleDate,
            relevanceScore: content.relevanceScore,
            startDate: startDate,
            pushType: pushType,
            style: style,
            deviceId: deviceID,
            timestamp: content.timestamp
        )
    }
}

extension Components.Schemas.ActivityUpdate {
    init?(ownJSON bytes: [UInt8]) {
        var content = OwnJSON.Content()
        var alert: Components.Schemas.Alert?
        var priority: Priority?
        let read = OwnJSON.forEachMember(of: bytes, in: bytes.indices) { member in
            if let known = content.read(member, in: bytes) { return known }
            if member.hasKey("alert", in: bytes) {
                alert = Components.Schemas.Alert(ownJSON: bytes, member.value)
                return alert != nil
            }
            if member.hasKey("priority", in: bytes) {
                priority = OwnJSON.priority(bytes, member.value)
                return priority != nil
            }
            return false
        }
        guard read, let contentState = content.contentState else { return nil }
        self.init(
            contentState: contentState,
            staleDate: content.staleDate,
            relevanceScore: content.relevanceScore,
            alert: alert,
            priority: priority,
            timestamp: content.timestamp
        )
    }
}

extension Components.Schemas.ActivityEnd {
    init?(ownJSON bytes: [UInt8]) {
        var content = OwnJSON.Content()
        var dismissal: Components.Schemas.Dismissal?
        let read = OwnJSON.forEachMember(of: bytes, in: bytes.indices) { member in
            if let known = content.read(member, in: bytes) { return known }
            if member.hasKey("dismissal", in: bytes) {
                dismissal = Components.Schemas.Dismissal(ownJSON: bytes, member.value)
                return dismissal != nil
            }
            return false
        }
        guard read else { return nil }
        self.init(
            contentState: content.contentState,
            staleDate: content.staleDate,
            relevanceScore: content.relevanceScore,
            dismissal: dismissal,
            timestamp: content.timestamp
        )
    }
}

extension Components.Schemas.Alert {
    init?(ownJSON bytes: [UInt8], _ range: Range<Int>) {
        var title: String?
        var body: String?
        var sound: String?
        let read = OwnJSON.forEachMember(of: bytes, in: range) { member in
            let text = OwnJSON.string(bytes, member.value)
            if member.hasKey("title", in: bytes) {
                title = text
            } else if member.hasKey("body", in: bytes) {
                body = text
            } else if member.hasKey("sound", in: bytes) {
                sound = text
            } else {
                return false
            }
            return text != nil
        }
        guard read, let title, let body else { return nil }
        self.init(title: title, body: body, sound: sound)
    }
}

extension Components.Schemas.Dismissal {
    /// `{"policy": "immediate"}`, `{"policy": "default"}` or `{"policy": "after", "date": …}`.
    init?(ownJSON bytes: [UInt8], _ range: Range<Int>) {
        var policy: String?
        var date: Timestamp?
        let read = OwnJSON.forEachMember(of: bytes, in: range) { member in
            if member.hasKey("policy", in: bytes) {
                policy = OwnJSON.string(bytes, member.value)
                return policy != nil
            }
            if member.hasKey("date", in: bytes) {
                date = OwnJSON.timestamp(bytes, member.value)
                return date != nil
            }
            return false
        }
        guard read else { return nil }
        switch (policy, date) {
        case ("immediate", nil): self = .immediate(.init(policy: .immediate))
        case ("default", nil): self = ._default(.init(policy: ._default))
        case ("after", let date?): self = .after(.init(policy: .after, date: date))
        default: return nil
        }
    }
}

/// What the readers above share: members, content and scalars as the generated decoders read
/// them, or `nil` where they might read them differently or refuse them.
enum OwnJSON {
    /// Calls `read` with each member of the object in `bytes[range]`; `false` when the text is
    /// not an object or `read` refused a member.
    static func forEachMember(
        of bytes: [UInt8],
        in range: Range<Int>,
        _ read: (JSONParser.Member) -> Bool
    ) -> Bool {
        guard let members = try? JSONParser.members(of: bytes, in: range) else { return false }
        return members.allSatisfy(read)
    }

    /// The members a request, an update and an end share.
    struct Content {
        var contentState: JSONObject?
        var staleDate: Timestamp?
        var relevanceScore: RelevanceScore?
        var timestamp: Timestamp?

        /// Reads `member` if it is one of these: whether its value was read; `nil` for another key.
        mutating func read(_ member: JSONParser.Member, in bytes: [UInt8]) -> Bool? {
            let value = member.value
            if member.hasKey("contentState", in: bytes) {
                contentState = try? JSONParser.parseObject(bytes, in: value)
                return contentState != nil
            }
            if member.hasKey("staleDate", in: bytes) {
                staleDate = OwnJSON.timestamp(bytes, value)
                return staleDate != nil
            }
            if member.hasKey("relevanceScore", in: bytes) {
                relevanceScore = OwnJSON.double(bytes, value).flatMap(RelevanceScore.init)
                return relevanceScore != nil
            }
            if member.hasKey("timestamp", in: bytes) {
                timestamp = OwnJSON.timestamp(bytes, value)
                return timestamp != nil
            }
            return nil
        }
    }

    static func string(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        guard case .string(let text) = try? JSONParser.parse(bytes, in: range) else { return nil }
        return text
    }

    /// A string read as a value of a type of strings (an identifier, an enumeration); `nil` for a
    /// string that is none of its values, as the generated decoder refuses it.
    static func rawValue<Value: RawRepresentable>(_ bytes: [UInt8], _ range: Range<Int>) -> Value?
    where Value.RawValue == String {
        string(bytes, range).flatMap(Value.init(rawValue:))
    }

    static func timestamp(_ bytes: [UInt8], _ range: Range<Int>) -> Timestamp? {
        string(bytes, range).flatMap(RFC3339.parse)
    }

    /// A number as a `Double`, rounded from its text as Foundation's decoder rounds it.
    static func double(_ bytes: [UInt8], _ range: Range<Int>) -> Double? {
        guard case .number = try? JSONParser.parse(bytes, in: range) else { return nil }
        return Double(String(decoding: bytes[range], as: UTF8.self))
    }

    /// `5` or `10`, written so: other spellings of those numbers are the generated decoder's to
    /// judge.
    static func priority(_ bytes: [UInt8], _ range: Range<Int>) -> Priority? {
        switch String(decoding: bytes[range], as: UTF8.self) {
        case "5": .low
        case "10": .high
        default: nil
        }
    }
}
