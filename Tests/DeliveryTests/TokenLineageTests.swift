import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import Testing

@Suite("Token lineage: which tokens an activity's pushes went to, and which died")
struct TokenLineageTests {
    static let start = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)

    static func events() throws -> [ActivityEvent] {
        let lifecycle = Lifecycle()
        let context = DecisionContext(
            app: AppRules(maxOpen: 10, priorityBudgetPerHour: 10),
            globalMaxOpen: 100,
            open: OpenCounts(app: 0, global: 0)
        )
        var request = Command.Request(
            activityType: "MatchAttributes",
            content: ActivityContent(contentState: .empty),
            deviceID: DeviceID(rawValue: "phone-1")
        )
        request.remoteStart = RemoteStart(pushToStartToken: "AA01", alert: Alert(title: "Kick-off", body: "Now"))
        var activity: Activity? = nil
        var events: [ActivityEvent] = []
        for (offset, command) in [
            Command.request(request), .registerPushToken("bb02"), .registerPushToken("cc03"),
            .registerPushToken("bb02"),
        ].enumerated() {
            for event in try lifecycle.decide(
                command,
                for: activity,
                at: start + .seconds(offset * 60),
                context: context
            ) {
                activity = try lifecycle.evolve(activity, with: event)
                events.append(event)
            }
        }
        return events
    }

    static func death(_ token: String, at minutes: Int, reason: String = "Unregistered") -> TokenDeath {
        TokenDeath(
            token: token,
            status: 410,
            reason: reason,
            invalidSince: start,
            recordedAt: start + .seconds(minutes * 60)
        )
    }

    @Test("the push-to-start token, then each push token in order; a death belongs to the first link it came after")
    func links() throws {
        let lineage = TokenLineage(
            events: try Self.events(),
            deaths: [Self.death("aa01", at: 0), Self.death("bb02", at: 2, reason: "ExpiredToken")]
        )
        #expect(lineage.links.map(\.kind) == [.pushToStart, .push, .push, .push])
        #expect(lineage.links.map(\.token) == ["AA01", "bb02", "cc03", "bb02"])
        #expect(lineage.links.map(\.version) == [1, 2, 3, 4])
        #expect(lineage.links[0].invalidation?.reason == "Unregistered")
        // bb02 died after its first registration, and was registered again later: alive then.
        #expect(lineage.links[1].invalidation?.reason == "ExpiredToken")
        #expect(lineage.links[2].invalidation == nil && lineage.links[3].invalidation == nil)
    }

    @Test("an activity the app started and that never had a token has no lineage")
    func empty() throws {
        let events = try Self.events()
        guard case .requested(var requested) = events[0].payload else { return }
        requested.remoteStart = nil
        let local = ActivityEvent(version: 1, occurredAt: Self.start, cause: .app, payload: .requested(requested))
        #expect(TokenLineage(events: [local], deaths: []).links.isEmpty)
    }
}
