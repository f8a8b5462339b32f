import CanonicalJSON
import LogArchive
import Postgres

/// How a table's rows are written into its archives (docs/decisions/0040): the personal columns
/// in the form an erasure leaves them, and, for the tables whose rows belong to an activity, the
/// originals sealed under the activity's key (`ArchiveKeyQueries.sealings`) in a column of their
/// own. An erasure destroys the keys; the archives do not change.
///
/// Its SQL reads the partition's row as `r`, and `z` as the columns the copy redacts itself (a
/// device's reference looked up by each row: `LATERAL`, an index probe). The sealed tables' rows
/// are redacted as they are sealed (`ArchiveSealer`), by `Redaction`'s rules: the database's
/// functions, called row by row, cost several times the copy.
struct ArchiveRedaction {
    /// A table whose rows are sealed: its personal column, redacted and sealed as it is copied;
    /// a row is known by its `rowKey`.
    struct Sealing {
        let rowKey: String
        let column: String
        let redact: ArchiveSealer.Redact
    }

    /// The columns written from `z`.
    let personal: Set<String>
    /// The statement, over `r`, that selects the columns the copy redacts (`z`).
    let redacted: StaticString
    /// The joins that find a device's reference.
    let joins: StaticString
    let sealing: Sealing?
    /// What a chunk's copy makes first.
    let preparation: Preparation

    enum Preparation {
        case nothing
        /// How the rows' activities are sealed (`ArchiveKeyQueries.sealings`).
        case sealings
        /// The references of the rows' devices that have none.
        case deviceReferences
    }

    /// The table's redaction (none for a table that holds nothing personal: `event_traces`).
    static func of(_ table: String) -> ArchiveRedaction {
        switch table {
        case "events":
            sealed(
                Sealing(rowKey: "position", column: "data") { value, reference, column in
                    guard case .object(let data) = try JSONParser.parse(Array(value.utf8)) else {
                        throw ArchivedColumns.Unreadable(description: "an event's data is not an object")
                    }
                    let redacted = Redaction.eventData(data, type: column("type") ?? "", reference: reference)
                    return redacted == data
                        ? nil : String(decoding: JSONValue.object(redacted).canonicalJSON, as: UTF8.self)
                }
            )
        case "push_token_invalidations":
            sealed(
                Sealing(rowKey: "id", column: "device_token") { value, _, _ in value == "erased" ? nil : "erased" }
            )
        case "rejections":
            // A refusal that names no activity (or not a valid id) belongs to no one's stream,
            // and no erasure reaches it: it has no reference, and is written as it is.
            sealed(
                Sealing(rowKey: "id", column: "details") { value, _, _ in
                    let details = try JSONParser.parse(Array(value.utf8))
                    let masked = Redaction.hidingValues(details)
                    return masked == details ? nil : String(decoding: masked.canonicalJSON, as: UTF8.self)
                }
            )
        case "deliveries":
            // A push's token is its registration's (`token_position`) or, for a start, the one
            // its request names: readers find it in the stream's events.
            ArchiveRedaction(
                personal: ["device_token"],
                redacted: "SELECT NULL::text AS device_token",
                joins: "",
                sealing: nil,
                preparation: .nothing
            )
        case "reload_deliveries":
            // Reloads are a device's: its id is written as its reference, its token not at all.
            ArchiveRedaction(
                personal: ["device_id", "device_token"],
                redacted: """
                    SELECT CASE WHEN r.device_id LIKE 'erased:%' THEN r.device_id::text
                        ELSE 'erased:' || coalesce(d.reference, gen_random_uuid()) END AS device_id,
                        NULL::text AS device_token
                    """,
                joins: """
                    LEFT JOIN LATERAL (
                        SELECT d.reference FROM device_references d WHERE d.app_id = r.app_id AND d.device_id = r.device_id
                    ) d ON true
                    """,
                sealing: nil,
                preparation: .deviceReferences
            )
        default:
            ArchiveRedaction(
                personal: [],
                redacted: "SELECT",
                joins: "",
                sealing: nil,
                preparation: .nothing
            )
        }
    }

    /// A table whose rows belong to an activity, sealed under its key.
    private static func sealed(_ sealing: Sealing) -> ArchiveRedaction {
        ArchiveRedaction(personal: [], redacted: "SELECT", joins: "", sealing: sealing, preparation: .sealings)
    }

    /// The columns selected for `columns` of the table, in its order.
    func selected(_ columns: [String]) -> [(of: StaticString, name: String)] {
        columns.map { personal.contains($0) ? ("z", $0) : ("r", $0) }
    }
}
