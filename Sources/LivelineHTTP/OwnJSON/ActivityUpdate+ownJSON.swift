import ActivityLifecycle
import CanonicalJSON

extension Components.Schemas.ActivityUpdate {
    /// The body read with Liveline's own parser, when it is one that the generated decoder reads
    /// to the same value: an object of known members, each of the type the document gives it.
    /// `nil` for anything else (an unknown member, a wrong type, a bad date), which is left to
    /// the generated decoder: it refuses it, and its refusal says what is wrong.
    ///
    /// `bytes` is strict JSON already (`StrictJSONBodies`), with no `null` outside free-form
    /// values and no key twice.
    init?(ownJSON bytes: [UInt8]) {
        guard let members = try? JSONParser.members(of: bytes, in: bytes.indices) else { return nil }
        var contentState: JSONObject?
        var staleDate: Timestamp?
        var relevanceScore: RelevanceScore?
        var alert: Components.Schemas.Alert?
        var priority: Priority?
        var timestamp: Timestamp?
        for member in members {
            let value = member.value
            if member.hasKey("contentState", in: bytes) {
                guard let object = try? JSONParser.parseObject(bytes, in: value) else { return nil }
                contentState = object
            } else if member.hasKey("staleDate", in: bytes) {
                guard let date = OwnJSON.timestamp(bytes, value) else { return nil }
                staleDate = date
            } else if member.hasKey("relevanceScore", in: bytes) {
                guard let score = OwnJSON.double(bytes, value).flatMap(RelevanceScore.init) else { return nil }
                relevanceScore = score
            } else if member.hasKey("alert", in: bytes) {
                guard let read = Components.Schemas.Alert(ownJSON: bytes, value) else { return nil }
                alert = read
            } else if member.hasKey("priority", in: bytes) {
                guard let read = OwnJSON.priority(bytes, value) else { return nil }
                priority = read
            } else if member.hasKey("timestamp", in: bytes) {
                guard let date = OwnJSON.timestamp(bytes, value) else { return nil }
                timestamp = date
            } else {
                return nil
            }
        }
        guard let contentState else { return nil }
        self.init(
            contentState: contentState,
            staleDate: staleDate,
            relevanceScore: relevanceScore,
            alert: alert,
            priority: priority,
            timestamp: timestamp
        )
    }
}

extension Components.Schemas.Alert {
    /// The alert in `bytes[range]`, as `ActivityUpdate(ownJSON:)` reads its members.
    init?(ownJSON bytes: [UInt8], _ range: Range<Int>) {
        guard let members = try? JSONParser.members(of: bytes, in: range) else { return nil }
        var title: String?
        var body: String?
        var sound: String?
        for member in members {
            guard let text = OwnJSON.string(bytes, member.value) else { return nil }
            if member.hasKey("title", in: bytes) {
                title = text
            } else if member.hasKey("body", in: bytes) {
                body = text
            } else if member.hasKey("sound", in: bytes) {
                sound = text
            } else {
                return nil
            }
        }
        guard let title, let body else { return nil }
        self.init(title: title, body: body, sound: sound)
    }
}

/// Scalars of a request body as the generated decoders read them, or `nil` where they might
/// read them differently or refuse them.
enum OwnJSON {
    static func string(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        guard case .string(let text) = try? JSONParser.parse(bytes, in: range) else { return nil }
        return text
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
