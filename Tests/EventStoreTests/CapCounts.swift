import Postgres

/// The rows that count open activities — each stripe's count and share, each device's count, the
/// excesses a lowered cap left — and, as a model, what a lone closing does to them.
struct CapCounts: Equatable {
    struct Share: Equatable {
        var open: Int
        var capacity: Int
    }

    struct AppStripe: Hashable {
        let app: String
        let stripe: Int
    }

    struct Device: Hashable {
        let app: String
        let device: String
    }

    /// Where an open activity is counted.
    struct Holder {
        let app: String
        let appStripe: Int
        let globalStripe: Int
        let device: String?
    }

    var app: [AppStripe: Share] = [:]
    var global: [Int: Share] = [:]
    var devices: [Device: Int] = [:]
    var appExcess: [String: Int] = [:]
    var serviceExcess = 0

    /// What closing an activity held by `holder` does, by the rule a lone closing follows
    /// (`liveline_append`): it frees its stripes and its device, and while a cap leaves excess it
    /// retires one unit of it, with its stripe's share, instead of making room.
    mutating func close(_ holder: Holder) {
        let stripe = AppStripe(app: holder.app, stripe: holder.appStripe)
        app[stripe]!.open -= 1
        if appExcess[holder.app, default: 0] > 0 {
            appExcess[holder.app]! -= 1
            app[stripe]!.capacity -= 1
        }
        if let device = holder.device { devices[Device(app: holder.app, device: device)]! -= 1 }
        global[holder.globalStripe]!.open -= 1
        if serviceExcess > 0 {
            serviceExcess -= 1
            global[holder.globalStripe]!.capacity -= 1
        }
    }

    /// The counts in the database, and where each open activity is counted, by activity id.
    static func read(_ connection: Connection) throws -> (counts: CapCounts, holders: [String: Holder]) {
        var counts = CapCounts()
        for row in try connection.query("SELECT app_id::text, stripe::integer, open, capacity FROM app_open_stripes") {
            counts.app[AppStripe(app: try row.decode(0), stripe: try row.decode(1))] = Share(
                open: try row.decode(2),
                capacity: try row.decode(3)
            )
        }
        for row in try connection.query("SELECT stripe::integer, open, capacity FROM global_open_stripes") {
            counts.global[try row.decode(0)] = Share(open: try row.decode(1), capacity: try row.decode(2))
        }
        for row in try connection.query("SELECT app_id::text, device_id, open FROM device_open_counts") {
            counts.devices[Device(app: try row.decode(0), device: try row.decode(1))] = try row.decode(2)
        }
        for row in try connection.query("SELECT app_id::text, open_excess FROM apps") {
            counts.appExcess[try row.decode(0)] = try row.decode(1)
        }
        counts.serviceExcess = try connection.query("SELECT open_excess FROM service_limits").single!.decode(0)
        var holders: [String: Holder] = [:]
        let rows = try connection.query(
            """
            SELECT activity_id::text, app_id::text, app_stripe::integer, global_stripe::integer, device_id
            FROM activities WHERE app_stripe IS NOT NULL
            """
        )
        for row in rows {
            holders[try row.decode(0)] = Holder(
                app: try row.decode(1),
                appStripe: try row.decode(2),
                globalStripe: try row.decode(3),
                device: try row.decode(4)
            )
        }
        return (counts, holders)
    }
}
