/// An update's or end's request that the activity's device reload the app's widgets once the
/// Live Activity push is settled (#57): all of them, or only those of `widgetKinds`. It needs the
/// activity's `deviceID`, which names the device.
public struct WidgetReload: Hashable, Sendable {
    /// The widget kinds to reload; `nil` for every widget the device listed.
    public var widgetKinds: [String]?

    public init(widgetKinds: [String]? = nil) {
        self.widgetKinds = widgetKinds
    }
}
