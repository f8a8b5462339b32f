import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PropertyBased
import Testing

@testable import LivelineHTTP

/// The hot operation read and answered with Liveline's own JSON (`OwnJSONOperations`) must be
/// indistinguishable from the generated code it stands in for.
@Suite("Requests, updates and ends with Liveline's own JSON, against the generated coders")
struct OwnJSONTests {
    typealias ActivityUpdate = LivelineHTTP.Components.Schemas.ActivityUpdate
    typealias ActivityEnd = LivelineHTTP.Components.Schemas.ActivityEnd
    typealias ActivityRequest = LivelineHTTP.Components.Schemas.ActivityRequest

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
        ("priority", ["5", "10", "7", "5.0", #""5""#, "1e1", "-5"]),
        ("timestamp", [#""2026-11-25T12:00:00Z""#, #""2026-02-30T00:00:00Z""#, "true"]),
        ("extra", ["1"]),
    ]

    /// An end's members beyond those it shares with an update.
    static let endCandidates: [(key: String, values: [String])] =
        candidates.filter { ["contentState", "staleDate", "relevanceScore", "timestamp", "extra"].contains($0.key) } + [
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

    @Test("a body read with the own parser is the value the generated decoder reads; the rest is left to it")
    func readsAsTheGeneratedDecoder() async {
        await propertyCheck(count: 2_000, input: Self.bodies(of: Self.candidates)) { body in
            let bytes = Array(body.utf8)
            guard let own = ActivityUpdate(ownJSON: bytes) else { return }
            let generated = try JSONDecoder().decode(ActivityUpdate.self, from: Data(bytes))
            #expect(own == generated, "\(body)")
        }
        await propertyCheck(count: 2_000, input: Self.bodies(of: Self.endCandidates)) { body in
            let bytes = Array(body.utf8)
            guard let own = ActivityEnd(ownJSON: bytes) else { return }
            let generated = try JSONDecoder().decode(ActivityEnd.self, from: Data(bytes))
            #expect(own == generated, "\(body)")
        }
        await propertyCheck(count: 2_000, input: Self.bodies(of: Self.requestCandidates)) { body in
            let bytes = Array(body.utf8)
            guard let own = ActivityRequest(ownJSON: bytes) else { return }
            let generated = try JSONDecoder().decode(ActivityRequest.self, from: Data(bytes))
            #expect(own == generated, "\(body)")
        }
    }

    @Test(
        "the requests clients send are read by the own parser",
        arguments: [
            #"{"activityType":"delivery","contentState":{"stage":"packed"}}"#,
            #"{"activityId":"order-7","activityType":"delivery","attributes":{"order":"A-7"},"#
                + #""contentState":{"eta":12},"staleDate":"2026-11-25T12:30:00Z","relevanceScore":0.5,"#
                + #""startDate":"2026-11-25T13:00:00Z","pushType":"token","style":"transient","deviceId":"phone-1","#
                + #""timestamp":"2026-11-25T12:00:00Z"}"#,
        ]
    )
    func readsPlainRequests(body: String) throws {
        let own = try #require(ActivityRequest(ownJSON: Array(body.utf8)))
        let generated = try JSONDecoder().decode(ActivityRequest.self, from: Data(body.utf8))
        #expect(own == generated)
    }

    @Test(
        "the bodies clients send are read by the own parser",
        arguments: [
            #"{"contentState":{"stage":"packed"}}"#,
            #"{"contentState":{"n":1.5},"staleDate":"2026-11-25T12:00:00Z","relevanceScore":0.5,"priority":10,"#
                + #""alert":{"title":"Out","body":"On its way","sound":"chime"},"timestamp":"2026-11-25T11:59:00.5Z"}"#,
        ]
    )
    func readsPlainBodies(body: String) throws {
        let own = try #require(ActivityUpdate(ownJSON: Array(body.utf8)))
        let generated = try JSONDecoder().decode(ActivityUpdate.self, from: Data(body.utf8))
        #expect(own == generated)
    }

    @Test(
        "the ends clients send are read by the own parser",
        arguments: [
            "{}", #"{"dismissal":{"policy":"immediate"}}"#,
            #"{"contentState":{"stage":"delivered"},"relevanceScore":1,"dismissal":{"policy":"after","#
                + #""date":"2026-11-25T13:00:00Z"},"timestamp":"2026-11-25T12:00:00Z"}"#,
        ]
    )
    func readsPlainEnds(body: String) throws {
        let own = try #require(ActivityEnd(ownJSON: Array(body.utf8)))
        let generated = try JSONDecoder().decode(ActivityEnd.self, from: Data(body.utf8))
        #expect(own == generated)
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

    @Test("an activity written with the own writer is the JSON the generated encoder writes, keys in the same order")
    func writesAsTheGeneratedEncoder() async {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        await propertyCheck(count: 500, input: Self.activities) { stored in
            let generated = Array(try encoder.encode(LivelineHTTP.Components.Schemas.Activity(stored)))
            let own = stored.ownJSON
            #expect(try JSONParser.parse(own) == (try JSONParser.parse(generated)))
            #expect(try Self.keys(own) == (try Self.keys(generated)), "\(String(decoding: own, as: UTF8.self))")
        }
    }

    /// The top-level keys of a JSON object, in the order written.
    private static func keys(_ bytes: [UInt8]) throws -> [String] {
        try JSONParser.members(of: bytes, in: bytes.indices).map { $0.key(in: bytes) }
    }

    @Test(
        "a request, an update and an end answered by the own coders are the answers of the generated ones, headers and body"
    )
    func sameAnswerEitherWay() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let key = app.key.key
            typealias Answer = (status: HTTPResponse.Status, headers: [String], body: JSONValue)
            var answers: [String: [Answer]] = [:]
            // `Accept: application/json, text/plain` is read by the generated code only.
            for (id, accept) in [("own", "application/json"), ("generated", "application/json, text/plain")] {
                let request =
                    #"{"activityId":"a-\#(id)","activityType":"t","attributes":{"o":"A"},"contentState":{"s":1},"#
                    + #""pushType":"token","style":"standard","deviceId":"phone-\#(id)"}"#
                let steps: [(path: String, ifMatch: String?, body: String)] = [
                    ("/v1/activities", nil, request),
                    (
                        "/v1/activities/a-\(id)/updates", "\"1\"",
                        #"{"contentState":{"s":2,"t":"é"},"relevanceScore":0.25}"#
                    ),
                    (
                        "/v1/activities/a-\(id)/end", "\"2\"",
                        #"{"contentState":{"s":3},"dismissal":{"policy":"immediate"}}"#
                    ),
                ]
                for (path, ifMatch, body) in steps {
                    var headers: HTTPFields = [.accept: accept]
                    headers[.ifMatch] = ifMatch
                    let response = try await api.send(.post, path, key: key, headers: headers, body: Array(body.utf8))
                    var answer = try JSONParser.parse(Array(buffer: response.body))
                    if case .object(var members) = answer {
                        // What differs between two activities requested a moment apart.
                        for varying in [
                            "activityId", "deviceId", "requestedAt", "activatedAt", "lastTimestamp", "nextDeadline",
                        ] {
                            members[varying] = nil
                        }
                        for timeKey in ["endedAt", "dismissedAt", "dismissalDate"] where members[timeKey] != nil {
                            members[timeKey] = .string("a time")
                        }
                        answer = .object(members)
                    }
                    let answered = [.eTag, .contentType, .location].map {
                        response.headers[$0]?.replacingOccurrences(of: "a-\(id)", with: "the id") ?? "-"
                    }
                    answers[id, default: []].append((response.status, answered, answer))
                }
            }
            let own = try #require(answers["own"])
            let generated = try #require(answers["generated"])
            #expect(own.map(\.status) == [.created, .ok, .ok])
            #expect(own.map(\.status) == generated.map(\.status))
            #expect(own.map(\.headers) == generated.map(\.headers))
            #expect(own.map(\.body) == generated.map(\.body))
        }
    }
}
