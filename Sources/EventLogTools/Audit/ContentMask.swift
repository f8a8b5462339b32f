public import CanonicalJSON
import EventStore

/// What the support console shows of an event's content until an admin reveals it: the content's
/// keys, every value under them masked (`Redaction.hidingValues`). Content is an activity's `attributes`, its
/// `contentState` and its alerts (`alert`), wherever they sit in an event's data; the rest (dates,
/// priorities, tokens, ids) is not content and stays.
public enum ContentMask {
    /// The members of event data that hold content.
    static let contentKeys: Set<String> = ["attributes", "contentState", "alert"]

    /// `data` with the values of its content masked.
    public static func mask(_ data: JSONObject) -> JSONObject {
        guard case .object(let members) = maskingContent(.object(data.members)) else { return data }
        return JSONObject(members)
    }

    /// A value outside content: its content members masked wherever they are.
    private static func maskingContent(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            .object(
                Dictionary(
                    uniqueKeysWithValues: members.map { key, value in
                        (key, contentKeys.contains(key) ? Redaction.hidingValues(value) : maskingContent(value))
                    }
                )
            )
        case .array(let elements): .array(elements.map(maskingContent))
        default: value
        }
    }
}
