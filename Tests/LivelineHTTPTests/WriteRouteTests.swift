import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PropertyBased
import PropertyChecks
import Testing

@testable import LivelineHTTP

/// The write routes (`ActivityWriteRoutes`) read their bodies with Liveline's own reader: held
/// here to openapi.yaml, with the types generated from it for the tests' client as the judge of
/// what the document admits.
@Suite("Requests, updates and ends held to openapi.yaml")
struct WriteRouteTests {
    typealias DocumentUpdate = LivelineHTTPTests.Components.Schemas.ActivityUpdate
    typealias DocumentEnd = LivelineHTTPTests.Components.Schemas.ActivityEnd
    typealias DocumentRequest = LivelineHTTPTests.Components.Schemas.ActivityRequest

    /// Members an update body may hold, each with spellings the generated decoder reads, and
    /// spellings it refuses or might read otherwise.
    static let candidates: [(key: String, values: [String])] = [
        (
            "contentState",
            [
                #"{"stage":"packed","eta":12}"#, "{}", #"{"n":[1,-0,2.50,1e2,0.1e-2],"o":{"deep":true,"z":null}}"#,
                #"{"big":12345678901234567890,"u":"\u00e9\/\n","e":"é😀"}"#, "[]", #""text""#, "1",
            ]
        ),
        (
            "staleDate",
            [
                #""2026-11-25T12:00:00Z""#, #""2026-11-25T12:00:00.123456+01:00""#, #""2026-11-25T12:00:00.1234567Z""#,
                #""not a date""#, #""2026-13-01T00:00:00Z""#, "5", #""2026-11-25T12:00:00\u005A""#,
            ]
        ),
        (
            "relevanceScore",
            ["0", "1.5", "-1", "1e2", #""1""#, "0.30000000000000004", "12345678901234567890", "-0", "5E-324"]
        ),
        (
            "alert",
            [
                #"{"title":"a","body":"b"}"#, #"{"title":"a","body":"b","sound":"chime"}"#, #"{"title":"a"}"#,
                #"{"title":"a","body":"b","x":1}"#, #"{"title":1,"body":"b"}"#, #"{"body":"b\u0021","title":"\ta"}"#,
                "[]",
            ]
        ),
        ("priority", ["5", "10", "7", "5.0", #""5""#, "1e1", "-5", "null"]),
        ("timestamp", [#""2026-11-25T12:00:00Z""#, #""2026-02-30T00:00:00Z""#, "true"]),
        ("extra", ["1"]),
        (
            "widgetReload",
            [
                "{}", #"{"widgetKinds":["Score","Table"]}"#, #"{"widgetKinds":[]}"#, #"{"widgetKinds":"Score"}"#,
                #"{"widgetKinds":[""]}"#, "{\"widgetKinds\":[\"\(String(repeating: "k", count: 129))\"]}",
                #"{"kinds":["Score"]}"#, "[]",
                #"{"widgetKinds":[1]}"#,
            ]
        ),
    ]

    /// The rules of `WidgetKinds` its types do not carry: 1–100 kinds of 1–128 characters, no NUL.
    static func breaksWidgetKinds(_ kinds: [String]?) -> Bool {
        guard let kinds else { return false }
        return !(1...100).contains(kinds.count)
            || kinds.contains { !(1...128).contains($0.unicodeScalars.count) || $0.unicodeScalars.contains("\u{0}") }
    }

    /// An end's members beyond those it shares with an update.
    static let endCandidates: [(key: String, values: [String])] =
        candidates.filter {
            ["contentState", "staleDate", "relevanceScore", "timestamp", "extra", "widgetReload"].contains($0.key)
        } + [
            (
                "dismissal",
                [
                    #"{"policy":"immediate"}"#, #"{"policy":"default"}"#,
                    #"{"policy":"after","date":"2026-11-25T13:00:00Z"}"#,
                    #"{"policy":"after"}"#, #"{"policy":"immediate","date":"2026-11-25T13:00:00Z"}"#,
                    #"{"policy":"never"}"#,
                    #"{"date":"2026-11-25T13:00:00Z","policy":"after"}"#, #""immediate""#,
                    #"{"policy":"default","x":1}"#,
                ]
            )
        ]

    /// A request's members beyond those it shares with an update.
    static let requestCandidates: [(key: String, values: [String])] =
        candidates.filter { ["contentState", "staleDate", "relevanceScore", "timestamp", "extra"].contains($0.key) } + [
            ("activityId", [#""order-1""#, #""a.b:c_d-9""#, #""no spaces""#, #""""#, "7", #""\u006f""#]),
            ("activityType", [#""delivery""#, #""""#, #""é\n""#, "[]"]),
            ("attributes", [#"{"order":"A-1"}"#, "{}", #"{"n":[1,2.5e3],"o":{"x":null}}"#, #""x""#]),
            ("startDate", [#""2026-11-25T12:00:00Z""#, #""2026-11-25""#, "0"]),
            ("pushType", [#""token""#, #""channel""#, #""none""#, #""Token""#, "1"]),
            ("style", [#""standard""#, #""transient""#, #""loud""#, "null"]),
            ("deviceId", [#""phone-1""#, #""phone 1""#, "2"]),
            ("remoteStart", [#"{"alert":{"title":"a","body":"b"}}"#]),
            ("channelId", [#""ch-1""#]),
        ]

    /// Bodies of some of `candidates`' members, in any order, with any of their spellings.
    static func bodies(of candidates: [(key: String, values: [String])]) -> Generator<String, some SendableSequenceType>
    {
        zip(Gen.int(in: 0..<candidates.count).array(of: 0...7), Gen.int(in: 0...9).array(of: candidates.count))
            .map { picks, spellings in
                var seen = Set<Int>()
                let members = picks.filter { seen.insert($0).inserted }.map { pick in
                    let candidate = candidates[pick]
                    return "\"\(candidate.key)\": \(candidate.values[spellings[pick] % candidate.values.count])"
                }
                return "{" + members.joined(separator: ", ") + "}"
            }
    }

    /// Reads `body` with `read` and with the document's decoder, and holds the one to the
    /// other: what the document refuses is refused, with a problem naming a field of the body;
    /// what it admits is read to the command the document's value means, unless `breaksRule`
    /// names a rule the document states beside its types (which its decoder does not check).
    static func holdToDocument<Document: Decodable, Read: Equatable>(
        _ body: String,
        read: ([UInt8]) throws(Problem) -> Read,
        document: Document.Type,
        meaning: (Document) -> Read?,
        breaksRule: (Document) -> Bool = { _ in false }
    ) {
        let bytes = Array(body.utf8)
        // No member of these schemas takes `null`, which the generated decoder reads as left out
        // (`bodies` writes each member as `"key": value`).
        let decoded = body.contains(": null") ? nil : try? JSONDecoder().decode(Document.self, from: Data(bytes))
        let result = Result { () throws(Problem) in try read(bytes) }
        switch result {
        case .success(let command):
            guard let decoded else {
                Issue.record("read what the document refuses: \(body)")
                return
            }
            #expect(!breaksRule(decoded), "\(body)")
            #expect(command == meaning(decoded), "\(body)")
        case .failure(let problem):
            #expect(problem.status == .badRequest || problem.code == "broadcast_cannot_start", "\(body): \(problem)")
            guard case .string(let field)? = problem.details["field"] else {
                Issue.record("no field named: \(body): \(problem)")
                return
            }
            // The field is a member the document knows, and the detail names it.
            let member = field.split(separator: "/").last.map(String.init) ?? ""
            #expect(body.contains("\"\(member)\"") || problem.detail.contains(member), "\(body): \(problem)")
            #expect(problem.detail.contains(field) || problem.detail.contains(member), "\(body): \(problem)")
            if let decoded {
                #expect(breaksRule(decoded), "refused what the document admits: \(body): \(problem)")
            }
        }
    }

    @Test("an update is read as the document reads it, and refused where it refuses it, naming the field")
    func updates() async {
        await checkProperty(count: 2_000, input: Self.bodies(of: Self.candidates)) { body in
            Self.holdToDocument(
                body,
                read: Command.Update.init(body:),
                document: DocumentUpdate.self,
                meaning: { update in
                    Command.Update(
                        content: ActivityContent(
                            contentState: update.contentState,
                            staleDate: update.staleDate,
                            relevanceScore: update.relevanceScore
                        ),
                        alert: update.alert.map { Alert(title: $0.title, body: $0.body, sound: $0.sound) },
                        priority: update.priority,
                        timestamp: update.timestamp,
                        widgetReload: update.widgetReload.map { WidgetReload(widgetKinds: $0.widgetKinds) }
                    )
                },
                breaksRule: { Self.breaksWidgetKinds($0.widgetReload?.widgetKinds) }
            )
        }
    }

    @Test("an end is read as the document reads it, and refused where it refuses it, naming the field")
    func ends() async {
        await checkProperty(count: 2_000, input: Self.bodies(of: Self.endCandidates)) { body in
            Self.holdToDocument(
                body,
                read: Command.End.init(body:),
                document: DocumentEnd.self,
                meaning: { end in
                    let dismissal: DismissalPolicy =
                        switch end.dismissal {
                        case nil, ._default: .default
                        case .immediate: .immediate
                        case .after(let after): .after(after.date)
                        }
                    return Command.End(
                        content: end.contentState.map {
                            ActivityContent(
                                contentState: $0,
                                staleDate: end.staleDate,
                                relevanceScore: end.relevanceScore
                            )
                        },
                        dismissal: dismissal,
                        timestamp: end.timestamp,
                        widgetReload: end.widgetReload.map { WidgetReload(widgetKinds: $0.widgetKinds) }
                    )
                },
                // dependentRequired: staleDate and relevanceScore need contentState.
                breaksRule: {
                    ($0.contentState == nil && ($0.staleDate != nil || $0.relevanceScore != nil))
                        || Self.breaksWidgetKinds($0.widgetReload?.widgetKinds)
                }
            )
        }
    }

    @Test("a request is read as the document reads it, and refused where it refuses it, naming the field")
    func requests() async {
        await checkProperty(count: 2_000, input: Self.bodies(of: Self.requestCandidates)) { body in
            Self.holdToDocument(
                body,
                read: { bytes throws(Problem) in
                    let body = try ActivityRequestBody(bytes)
                    return RequestReading(body.activityID, body.command, body.channelID, body.remoteStartAlert)
                },
                document: DocumentRequest.self,
                meaning: { request in
                    RequestReading(
                        request.activityId,
                        Command.Request(
                            activityType: request.activityType,
                            attributes: request.attributes ?? .empty,
                            content: ActivityContent(
                                contentState: request.contentState,
                                staleDate: request.staleDate,
                                relevanceScore: request.relevanceScore
                            ),
                            startDate: request.startDate,
                            pushType: request.channelId == nil ? request.pushType : .channel,
                            style: request.style,
                            deviceID: request.deviceId,
                            timestamp: request.timestamp
                        ),
                        request.channelId,
                        request.remoteStart.map {
                            Alert(title: $0.alert.title, body: $0.alert.body, sound: $0.alert.sound)
                        }
                    )
                },
                // minLength of activityType; if pushType is channel, channelId; dependentSchemas
                // of channelId; dependentRequired of remoteStart.
                breaksRule: { request in
                    request.activityType.isEmpty || (request.pushType == .channel && request.channelId == nil)
                        || (request.channelId != nil && request.pushType == .token)
                        || (request.remoteStart != nil && request.deviceId == nil)
                }
            )
        }
    }

    /// What a request's body is read to.
    struct RequestReading: Equatable {
        var activityID: ActivityID?
        var command: Command.Request
        var channelID: String?
        var remoteStartAlert: Alert?

        init(_ activityID: ActivityID?, _ command: Command.Request, _ channelID: String?, _ alert: Alert?) {
            (self.activityID, self.command, self.channelID, self.remoteStartAlert) = (
                activityID, command, channelID, alert
            )
        }
    }

    @Test("a body without dates has the digest it had before 0026 (Foundation's encoding of the decoded body)")
    func digestAsBefore() async {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Dates are written back in UTC, and Foundation keeps the sign of -0 and writes the
        // largest numbers with an exponent: those bodies have a new digest.
        let undated =
            Self.candidates.filter { !["staleDate", "timestamp", "relevanceScore"].contains($0.key) } + [
                ("relevanceScore", ["0", "1.5", "1e2", "0.30000000000000004", "5E-324"])
            ]
        await checkProperty(count: 1_000, input: Self.bodies(of: undated)) { body in
            guard !body.contains(": null"),
                let update = try? JSONDecoder().decode(DocumentUpdate.self, from: Data(body.utf8))
            else { return }
            let before = Array(try encoder.encode(update))
            #expect(try JSONParser.parseObject(Array(body.utf8)).canonicalJSON == before, "\(body)")
        }
    }

    @Test(
        "a refusal over HTTP says what is wrong and names the field, on the write routes and the generated ones alike",
        arguments: [
            ("/v1/activities/a1/updates", #"{"contentState":{},"colour":"red"}"#, "/colour", "Unknown field /colour"),
            ("/v1/activities/a1/updates", #"{"staleDate":"2026-11-25T12:00:00Z"}"#, "/contentState", "is required"),
            ("/v1/activities/a1/updates", #"{"contentState":{},"priority":7}"#, "/priority", "must be 5 or 10"),
            ("/v1/activities/a1/updates", #"{"contentState":{},"staleDate":"soon"}"#, "/staleDate", "RFC 3339"),
            ("/v1/activities/a1/updates", #"{"contentState":{},"alert":{"title":"t"}}"#, "/alert/body", "is required"),
            ("/v1/activities/a1/updates", #"{"contentState":{},"relevanceScore":null}"#, "/relevanceScore", "null"),
            ("/v1/activities/a1/end", #"{"dismissal":{"policy":"never"}}"#, "/dismissal/policy", "must be one of"),
            ("/v1/activities/a1/end", #"{"relevanceScore":1}"#, "/relevanceScore", "final content"),
            ("/v1/activities", #"{"activityType":"T","contentState":[]}"#, "/contentState", "must be an object"),
            ("/v1/activities", #"{"activityType":"T","contentState":{},"style":"loud"}"#, "/style", "must be one of"),
            ("/v1/activities/a1/push-token", #"{"pushToken":"ab","colour":"red"}"#, "/colour", "Unknown field /colour"),
            ("/v1/activities/a1/push-token", #"{"pushToken":1}"#, "/pushToken", "must be a string"),
        ]
    )
    func refusalsNameTheField(path: String, body: String, field: String, saying: String) async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let method: HTTPRequest.Method = path.hasSuffix("push-token") ? .put : .post
            let response = try await api.send(method, path, key: app.key.key, body: Array(body.utf8))
            #expect(response.status == .badRequest, "\(body)")
            let refusal = try problem(response)
            #expect(refusal.code == "invalid_request", "\(body)")
            #expect(refusal.detail("field") == .string(field), "\(body): \(refusal.detail)")
            #expect(refusal.detail.contains(saying), "\(body): \(refusal.detail)")
        }
    }

    static let activities = zip(
        zip(Gen.int(in: 0...4), Gen.int(in: 1...1_000_000), Gen.int64(in: 0...4_000_000_000_000_000)),
        zip(Gen.int(in: 0...1), Gen.int(in: 0...2), Gen.int(in: 0...4)),
        zip(Gen.double(in: 0...1_000), Gen.letterOrNumber.string(of: 0...6), Gen.int(in: 0...1_000).array(of: 12))
    )
    .map { first, second, third in
        let (state, version, micros) = first
        let (present, kind, style) = second
        let (score, text, offsets) = third
        func time(_ index: Int) -> Timestamp {
            Timestamp(microsecondsSince1970: micros + Int64(offsets[index]) * 999_983)
        }
        func maybe<T>(_ index: Int, _ value: T) -> T? { offsets[index].isMultiple(of: 3) ? nil : value }
        let activity = Activity(
            state: ActivityState.allCases[state],
            version: version,
            activityType: "type-" + text,
            attributes: JSONObject(["order": .string(text + "\u{1}\"/é"), "n": .number(JSONNumber(score))]),
            content: ActivityContent(
                contentState: JSONObject(["s": .array([.bool(true), .null, .number(JSONNumber(version))])]),
                staleDate: maybe(0, time(0)),
                relevanceScore: maybe(1, RelevanceScore(score)!)
            ),
            startDate: maybe(2, time(2)),
            pushType: maybe(3, PushType.allCases[present]),
            style: maybe(4, ActivityStyle.allCases[style % ActivityStyle.allCases.count]),
            deviceID: maybe(5, DeviceID(rawValue: "phone-" + text)!),
            pushToken: maybe(6, String(repeating: "ab", count: 4 + style)),
            requestedAt: time(7),
            activatedAt: maybe(8, time(8)),
            endedAt: maybe(9, time(9)),
            endReason: maybe(9, present == 0 ? EndReason.app : .lifetimeExceeded),
            dismissedAt: maybe(10, time(10)),
            dismissalDate: maybe(11, time(11)),
            lastTimestamp: maybe(0, time(1)),
            lastEventAt: time(7),
            recentHighPriorityUpdates: []
        )
        return StoredActivity(
            stream: StreamID(app: AppID(rawValue: "app")!, activity: ActivityID(rawValue: "a-" + text)!),
            activity: activity,
            nextDeadline: maybe(3, Deadline(kind: Deadline.Kind.allCases[kind], due: time(4)))
        )
    }

    @Test(
        "an activity as the write routes write it is the JSON the read routes' generated encoder writes, keys in order"
    )
    func writesAsTheGeneratedEncoder() async {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        await checkProperty(count: 500, input: Self.activities) { stored in
            let generated = Array(try encoder.encode(LivelineHTTP.Components.Schemas.Activity(stored)))
            let own = stored.apiJSON
            #expect(try JSONParser.parse(own) == (try JSONParser.parse(generated)))
            #expect(try Self.keys(own) == (try Self.keys(generated)), "\(String(decoding: own, as: UTF8.self))")
        }
    }

    /// The top-level keys of a JSON object, in the order written.
    private static func keys(_ bytes: [UInt8]) throws -> [String] {
        try JSONParser.members(of: bytes, in: bytes.indices).map { $0.key(in: bytes) }
    }
}
