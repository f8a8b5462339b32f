public import CanonicalJSON

/// What an erasure leaves of a value (docs/event-log.md#erasure), by the rules the database's
/// `liveline_masked` and `liveline_redacted_event_data` apply to the live log: archives' rows are
/// redacted by these as they are copied (`ArchiveRedaction`), and a test holds the two alike.
public enum Redaction {
    /// What stands for a masked value.
    public static let masked = "•••"

    /// Content as an erasure leaves it: its objects' keys kept, every other value masked.
    public static func hidingValues(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members): .object(members.mapValues(hidingValues))
        case .array(let elements): .array(elements.map(hidingValues))
        default: .string(masked)
        }
    }

    /// An event's data as an erasure leaves it: content (`attributes`, `content.contentState`,
    /// alerts) masked, tokens `erased`, the device id `erased:<reference>`, the rest as it was.
    public static func eventData(
        _ members: [String: JSONValue],
        type: String,
        reference: String
    ) -> [String: JSONValue] {
        var members = members
        if let attributes = members["attributes"] { members["attributes"] = hidingValues(attributes) }
        if case .object(var content)? = members["content"] {
            content["contentState"] = content["contentState"].map(hidingValues) ?? .null
            members["content"] = .object(content)
        }
        if let alert = members["alert"] { members["alert"] = hidingValues(alert) }
        if members["deviceId"] != nil { members["deviceId"] = .string("erased:" + reference) }
        if case .object(let start)? = members["remoteStart"] {
            members["remoteStart"] = .object([
                "pushToStartToken": .string("erased"), "alert": start["alert"].map(hidingValues) ?? .null,
            ])
        }
        if members["pushToken"] != nil { members["pushToken"] = .string("erased") }
        if type == "activity.start_unconfirmed", members["pushToStartToken"] != nil {
            members["pushToStartToken"] = .string("erased")
        }
        return members
    }
}
