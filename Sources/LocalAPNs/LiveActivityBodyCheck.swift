import CanonicalJSON

/// What Apple does not check but a device needs: a JSON object with an `aps` object holding an
/// `event` (`start`, `update` or `end`), an integer `timestamp` in seconds and a
/// `content-state` object; a start also needs `attributes-type`, `attributes` and an `alert`.
/// Apple would accept such a push and the device would drop it silently; the local APNs refuses
/// it (`400 BadPayload: …`) so a test sees the mistake.
enum LiveActivityBodyCheck {
    static func problem(in body: [UInt8]) -> String? {
        guard case .object(let root)? = try? JSONParser.parse(body) else { return "the body is not a JSON object" }
        guard case .object(let aps)? = root["aps"] else { return "no aps object" }
        guard case .string(let event)? = aps["event"], ["start", "update", "end"].contains(event) else {
            return "aps.event must be start, update or end"
        }
        guard case .number(let timestamp)? = aps["timestamp"], let seconds = timestamp.integer,
            seconds < 100_000_000_000
        else { return "aps.timestamp must be whole seconds since 1970" }
        guard case .object? = aps["content-state"] else { return "aps.content-state must be an object" }
        for date in ["stale-date", "dismissal-date"] where aps[date] != nil {
            guard case .number(let value)? = aps[date], value.integer != nil else {
                return "aps.\(date) must be whole seconds since 1970"
            }
        }
        if event == "start" {
            guard case .string? = aps["attributes-type"], case .object? = aps["attributes"] else {
                return "a start needs aps.attributes-type and aps.attributes"
            }
            guard case .object? = aps["alert"] else { return "a start needs aps.alert" }
        }
        if let alert = aps["alert"] {
            guard case .object = alert else { return "aps.alert must be an object" }
        }
        return nil
    }
}
