import CanonicalJSON
import EventLogTools
import EventStore
import Postgres
import PropertyBased
import PropertyChecks
import TestSupport
import Testing

/// The console's mask over random event data: content (under `attributes`, `contentState` and
/// `alert`, at any depth) keeps its shape and keys and loses every value; the rest is untouched.
@Suite("Content masked and event data redacted: keys kept, values gone, the rest untouched, alike in SQL and Swift")
struct ContentMaskTests {
    static let keys = ["attributes", "contentState", "alert", "content", "staleDate", "deviceId", "items"]

    /// A JSON value built from `recipe`, each leaf a distinct string or number.
    static func value(_ recipe: inout ArraySlice<Int>, depth: Int, counter: inout Int) -> JSONValue {
        let choice = recipe.popFirst() ?? 0
        counter += 1
        switch depth >= 4 ? choice % 4 : choice % 6 {
        case 0: return .string("secret-\(counter)")
        case 1: return .number(JSONNumber(counter * 7919))
        case 2: return .bool(choice % 2 == 0)
        case 3: return .null
        case 4:
            let count = (recipe.popFirst() ?? 0) % 4
            return .array((0..<count).map { _ in value(&recipe, depth: depth + 1, counter: &counter) })
        default:
            let count = (recipe.popFirst() ?? 0) % 4
            var members: [String: JSONValue] = [:]
            for _ in 0..<count {
                members[keys[(recipe.popFirst() ?? 0) % keys.count]] = value(
                    &recipe,
                    depth: depth + 1,
                    counter: &counter
                )
            }
            return .object(members)
        }
    }

    /// Whether `masked` is `original` with every value inside content masked and nothing else changed.
    static func isMasked(_ masked: JSONValue, from original: JSONValue, inContent: Bool) -> Bool {
        switch (original, masked) {
        case (.object(let members), .object(let maskedMembers)):
            return members.keys.sorted() == maskedMembers.keys.sorted()
                && members.allSatisfy { key, value in
                    isMasked(
                        maskedMembers[key]!,
                        from: value,
                        inContent: inContent || ["attributes", "contentState", "alert"].contains(key)
                    )
                }
        case (.array(let elements), .array(let maskedElements)):
            return elements.count == maskedElements.count
                && zip(elements, maskedElements).allSatisfy { isMasked($1, from: $0, inContent: inContent) }
        default:
            return inContent ? masked == .string(Redaction.masked) : masked == original
        }
    }

    @Test("random event data: the mask keeps every key and shape, hides content's values, leaves the rest")
    func masking() async {
        await checkProperty(count: 2_000, input: Gen.int(in: 0...1_000).array(of: 1...60)) { recipe in
            var slice = recipe[...]
            var counter = 0
            var members: [String: JSONValue] = [:]
            while !slice.isEmpty {
                members[Self.keys[(slice.popFirst() ?? 0) % Self.keys.count]] = Self.value(
                    &slice,
                    depth: 0,
                    counter: &counter
                )
            }
            let data = JSONObject(members)
            let masked = ContentMask.mask(data)
            #expect(Self.isMasked(.object(masked.members), from: .object(data.members), inContent: false))
            #expect(ContentMask.mask(masked) == masked)
        }
    }

    @Test(
        "the database's mask (liveline_masked, which erasure writes) is the console's, and masking twice is masking once"
    )
    func databaseMasksAlike() async throws {
        let database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            try await pool.withConnection { connection in
                var generator = SystemRandomNumberGenerator()
                for _ in 0..<300 {
                    var recipe = (0..<40).map { _ in Int.random(in: 0...1_000, using: &generator) }[...]
                    var counter = 0
                    let value = Self.value(&recipe, depth: 0, counter: &counter)
                    let console = ContentMask.mask(JSONObject(["contentState": value])).members["contentState"]
                    let row = try connection.query(
                        """
                        SELECT liveline_masked(\(JSONB(utf8: value.canonicalJSON)))::text AS once,
                            liveline_masked(liveline_masked(\(JSONB(utf8: value.canonicalJSON))))::text AS twice
                        """
                    ).single!
                    let once = try JSONParser.parse(Array(try row.decode("once", as: String.self).utf8))
                    #expect(once == console, "\(String(decoding: value.canonicalJSON, as: UTF8.self))")
                    #expect(try row.decode("twice", as: String.self) == row.decode("once", as: String.self))
                }
            }
        }
    }

    @Test(
        "archives' redaction (Redaction.eventData) is the live log's (liveline_redacted_event_data) on random event data"
    )
    func archivesRedactAlike() async throws {
        let members = [
            "attributes", "content", "contentState", "alert", "deviceId", "pushToken", "remoteStart",
            "pushToStartToken",
            "staleDate", "reason",
        ]
        let types = ["activity.requested", "activity.updated", "activity.start_unconfirmed", "activity.ended"]
        let database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            try await pool.withConnection { connection in
                var generator = SystemRandomNumberGenerator()
                for _ in 0..<300 {
                    var recipe = (0..<60).map { _ in Int.random(in: 0...1_000, using: &generator) }[...]
                    var counter = 0
                    var data: [String: JSONValue] = [:]
                    for _ in 0..<((recipe.popFirst() ?? 0) % 6) {
                        let key = members[(recipe.popFirst() ?? 0) % members.count]
                        data[key] = Self.value(&recipe, depth: 1, counter: &counter)
                    }
                    let type = types[(recipe.popFirst() ?? 0) % types.count]
                    let reference = "5f0c7a8e-3b1d-4c2a-9e6f-0a1b2c3d4e5f"
                    let database = try connection.query(
                        """
                        SELECT liveline_redacted_event_data(\(type), \(JSONB(utf8: JSONValue.object(data).canonicalJSON)),
                            \(reference)::uuid)::text AS redacted
                        """
                    ).single!.decode("redacted", as: String.self)
                    let archives = Redaction.eventData(data, type: type, reference: reference)
                    #expect(
                        try JSONParser.parse(Array(database.utf8)) == .object(archives),
                        "\(type) \(String(decoding: JSONValue.object(data).canonicalJSON, as: UTF8.self))"
                    )
                }
            }
        }
    }
}
