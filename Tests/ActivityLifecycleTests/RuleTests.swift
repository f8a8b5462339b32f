import ActivityLifecycle
import CanonicalJSON
import Testing

/// Content whose encoded `attributes` + `contentState` is exactly `size` bytes.
func content(totalSize size: Int, attributes: JSONObject) -> ActivityContent {
    // {"s":""} is 8 bytes; each character of the string adds one.
    let filler = String(repeating: "x", count: size - attributes.encodedSize - 8)
    return ActivityContent(contentState: JSONObject(["s": .string(filler)]))
}

@Suite("Rule 1: payload size")
struct SizeRuleTests {
    let attributes = JSONObject(["order": .string("A-1")])

    @Test("a request of exactly 4096 bytes is accepted; 4097 is refused with the measured size")
    func request() throws {
        var accepted = Timeline()
        try accepted.send(
            .request(
                .init(
                    activityType: "t",
                    attributes: attributes,
                    content: content(totalSize: 4096, attributes: attributes)
                )
            )
        )
        #expect(accepted.activity?.payloadSize == 4096)

        var refused = Timeline()
        let rejection = refused.rejection(
            of: .request(
                .init(
                    activityType: "t",
                    attributes: attributes,
                    content: content(totalSize: 4097, attributes: attributes)
                )
            )
        )
        #expect(rejection == .dataTooLarge(size: 4097, limit: 4096))
        #expect(rejection?.code == "data_too_large")
        #expect(refused.activity == nil)
    }

    @Test("an update counts the activity's attributes with its new content")
    func update() throws {
        var timeline = Timeline()
        try timeline.send(Make.request(attributes: attributes))
        try timeline.send(.update(.init(content: content(totalSize: 4096, attributes: attributes))))
        let rejection = timeline.rejection(
            of: .update(.init(content: content(totalSize: 4097, attributes: attributes)))
        )
        #expect(rejection == .dataTooLarge(size: 4097, limit: 4096))
    }

    @Test("final content given with an end is held to the same limit")
    func endContent() throws {
        var timeline = Timeline()
        try timeline.send(Make.request(attributes: attributes))
        let rejection = timeline.rejection(of: Make.end(content: content(totalSize: 5000, attributes: attributes)))
        #expect(rejection == .dataTooLarge(size: 5000, limit: 4096))
        #expect(timeline.state == .active)
    }

    @Test("the size is that of the canonical encoding, whatever the input's spacing or key order")
    func canonicalSize() {
        let object = JSONObject(["b": .array([.number(1), .number(2.5)]), "a": .string("é\"\n"), "c": .null])
        #expect(String(decoding: object.canonicalJSON, as: UTF8.self) == #"{"a":"é\"\n","b":[1,2.5],"c":null}"#)
        #expect(object.encodedSize == object.canonicalJSON.count)
    }
}

@Suite("Rule 2: lifetime")
struct LifetimeRuleTests {
    @Test("8 hours after it became active, the system ends it: reason lifetime_exceeded, policy default")
    func endsAtLifetime() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        let activatedAt = timeline.now
        timeline.now = activatedAt + .hours(8) - .microseconds(1)
        #expect(timeline.applyDeadlines().isEmpty)
        timeline.now = activatedAt + .hours(8)
        let events = timeline.applyDeadlines()
        guard case .ended(let ended) = events.first?.payload else {
            Issue.record("expected activity.ended, got \(events)")
            return
        }
        #expect(ended.reason == .lifetimeExceeded)
        #expect(ended.dismissalPolicy == .default)
        #expect(ended.dismissalDate == activatedAt + .hours(12))
        #expect(events.first?.cause == .system)
        #expect(events.first?.occurredAt == activatedAt + .hours(8))
    }

    @Test("the lifetime counts from the scheduled start, not from the request")
    func countsFromActivation() throws {
        var timeline = Timeline()
        let startDate = timeline.now + .hours(3)
        try timeline.send(Make.request(startDate: startDate))
        timeline.now = startDate + .hours(8) - .seconds(1)
        timeline.applyDeadlines()
        #expect(timeline.state == .active)
        #expect(timeline.activity?.activatedAt == startDate)
        timeline.now = startDate + .hours(8)
        timeline.applyDeadlines()
        #expect(timeline.state == .ended)
    }

    @Test("an update after the lifetime finds the activity ended, even before the worker ran")
    func updateAfterLifetime() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        timeline.advance(.hours(9))
        #expect(timeline.rejection(of: Make.update()) == .activityEnded(state: .ended))
    }

    @Test("a shortened lifetime (tests, staging) is honoured")
    func configurable() throws {
        var policy = LifecyclePolicy()
        policy.activeLifetime = .seconds(5)
        var timeline = Timeline(policy: policy)
        try timeline.send(Make.request())
        timeline.advance(.seconds(5))
        timeline.applyDeadlines()
        #expect(timeline.state == .ended)
    }
}

@Suite("Rule 3: dismissal policy")
struct DismissalRuleTests {
    private func endedTimeline(_ policy: DismissalPolicy) throws -> (Timeline, [ActivityEvent]) {
        var timeline = Timeline()
        try timeline.send(Make.request())
        timeline.advance(.minutes(10))
        let events = try timeline.send(Make.end(policy))
        return (timeline, events)
    }

    @Test("immediate: dismissed at once, in the same decision")
    func immediate() throws {
        let (timeline, events) = try endedTimeline(.immediate)
        #expect(events.map(\.type) == [.ended, .dismissed])
        #expect(events.allSatisfy { $0.occurredAt == timeline.now })
        #expect(events.last?.payload == .dismissed(.init(reason: .immediate)))
        #expect(timeline.state == .dismissed)
    }

    @Test("default: dismissed 4 hours after the end, by the system")
    func defaultPolicy() throws {
        var (timeline, events) = try endedTimeline(.default)
        let endedAt = timeline.now
        #expect(events.map(\.type) == [.ended])
        #expect(timeline.activity?.dismissalDate == endedAt + .hours(4))
        timeline.now = endedAt + .hours(4) - .microseconds(1)
        #expect(timeline.applyDeadlines().isEmpty)
        timeline.now = endedAt + .hours(5)
        let dismissal = timeline.applyDeadlines()
        #expect(dismissal.map(\.type) == [.dismissed])
        #expect(dismissal.first?.occurredAt == endedAt + .hours(4))
        #expect(dismissal.first?.payload == .dismissed(.init(reason: .deadline)))
    }

    @Test(
        "after(date): clamped into [end, end + 4 h]; a date not after the end means immediate",
        arguments: [
            (Duration.hours(1), Duration.hours(1)),
            (.hours(4), .hours(4)),
            (.hours(4) + .seconds(1), .hours(4)),
            (.hours(48), .hours(4)),
            (.zero, .zero),
            (.zero - .seconds(30), .zero),
        ]
    )
    func after(offset: Duration, expected: Duration) throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        timeline.advance(.minutes(10))
        let endedAt = timeline.now
        try timeline.send(Make.end(.after(endedAt + offset)))
        if expected == .zero {
            #expect(timeline.state == .dismissed)
        } else {
            #expect(timeline.state == .ended)
            #expect(timeline.activity?.dismissalDate == endedAt + expected)
        }
    }
}

@Suite("Rule 4: staleness")
struct StalenessRuleTests {
    @Test("at the stale date an active activity becomes stale; a later update makes it active with a new stale date")
    func staleThenActive() throws {
        var timeline = Timeline()
        let staleDate = timeline.now + .minutes(30)
        try timeline.send(Make.request(staleDate: staleDate))
        timeline.now = staleDate
        let events = timeline.applyDeadlines()
        #expect(events.map(\.type) == [.becameStale])
        #expect(events.first?.occurredAt == staleDate)
        #expect(timeline.state == .stale)

        timeline.advance(.minutes(5))
        try timeline.send(Make.update(staleDate: timeline.now + .minutes(30)))
        #expect(timeline.state == .active)
        #expect(timeline.activity?.content.staleDate == timeline.now + .minutes(30))
    }

    @Test("a stale date equal to now makes the update land directly in stale")
    func staleDateNow() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        let events = try timeline.send(Make.update(staleDate: timeline.now))
        #expect(events.map(\.type) == [.updated, .becameStale])
        #expect(timeline.state == .stale)
    }

    @Test("a stale date in the past makes the update land directly in stale")
    func staleDatePast() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        try timeline.send(Make.update(staleDate: timeline.now - .minutes(1)))
        #expect(timeline.state == .stale)
    }

    @Test("a request whose stale date has passed starts stale")
    func requestWithPastStaleDate() throws {
        var timeline = Timeline()
        let events = try timeline.send(Make.request(staleDate: timeline.now - .seconds(1)))
        #expect(events.map(\.type) == [.requested, .becameStale])
        #expect(timeline.state == .stale)
    }

    @Test("an update that moves the stale date cancels the old one")
    func movedStaleDate() throws {
        var timeline = Timeline()
        let first = timeline.now + .minutes(10)
        try timeline.send(Make.request(staleDate: first))
        timeline.advance(.minutes(5))
        try timeline.send(Make.update(staleDate: timeline.now + .minutes(30)))
        timeline.now = first
        #expect(timeline.applyDeadlines().isEmpty)
        #expect(timeline.rejection(of: .markStale) == .notDue(command: "mark stale", dueAt: first + .minutes(25)))
        #expect(timeline.state == .active)
    }

    @Test("an update without a stale date clears it")
    func clearedStaleDate() throws {
        var timeline = Timeline()
        try timeline.send(Make.request(staleDate: timeline.now + .minutes(10)))
        try timeline.send(Make.update())
        #expect(timeline.lifecycle.nextDeadline(of: timeline.activity!)?.kind == .lifetime)
    }
}

@Suite("Rule 5: scheduled start")
struct ScheduledStartRuleTests {
    @Test("a future start date keeps it pending until then; the system starts it at that date")
    func startsAtStartDate() throws {
        var timeline = Timeline()
        let startDate = timeline.now + .hours(2)
        try timeline.send(Make.request(startDate: startDate))
        #expect(timeline.state == .pending)
        timeline.now = startDate - .microseconds(1)
        #expect(timeline.applyDeadlines().isEmpty)
        #expect(timeline.rejection(of: .start) == .notDue(command: "start", dueAt: startDate))
        timeline.now = startDate + .minutes(3)
        let events = timeline.applyDeadlines()
        #expect(events.map(\.type) == [.started])
        #expect(events.first?.occurredAt == startDate)
        #expect(timeline.activity?.activatedAt == startDate)
    }

    @Test("a pending activity is open: it counts against the caps")
    func pendingIsOpen() {
        #expect(ActivityState.pending.isOpen)
    }

    @Test("updates while pending keep it pending")
    func updatePending() throws {
        var timeline = Timeline()
        try timeline.send(Make.request(startDate: timeline.now + .hours(1)))
        try timeline.send(Make.update(7))
        #expect(timeline.state == .pending)
        #expect(timeline.activity?.content == content(7))
    }

    @Test(
        "ending a pending activity dismisses it immediately, whatever the policy",
        arguments: [DismissalPolicy.default, .after(Timeline.start + .hours(2)), .immediate]
    )
    func endPending(policy: DismissalPolicy) throws {
        var timeline = Timeline()
        try timeline.send(Make.request(startDate: timeline.now + .hours(1)))
        let events = try timeline.send(Make.end(policy))
        #expect(events.map(\.type) == [.ended, .dismissed])
        #expect(events.last?.payload == .dismissed(.init(reason: .immediate)))
        #expect(timeline.state == .dismissed)
    }
}

@Suite("Rule 6: ordering")
struct OrderingRuleTests {
    @Test("an update whose timestamp equals the last applied one is outdated")
    func equalTimestamp() throws {
        var timeline = Timeline()
        let t = timeline.now - .seconds(10)
        try timeline.send(Make.request(timestamp: t))
        #expect(timeline.rejection(of: Make.update(timestamp: t)) == .outdatedUpdate(timestamp: t, lastTimestamp: t))
        try timeline.send(Make.update(timestamp: t + .microseconds(1)))
        #expect(
            timeline.rejection(of: Make.update(timestamp: t))
                == .outdatedUpdate(timestamp: t, lastTimestamp: t + .microseconds(1))
        )
        #expect(timeline.rejection(of: Make.update(timestamp: t))?.code == "outdated_update")
    }

    @Test("updates without timestamps are never outdated")
    func noTimestamp() throws {
        var timeline = Timeline()
        try timeline.send(Make.request(timestamp: timeline.now))
        try timeline.send(Make.update())
        try timeline.send(Make.update())
        #expect(timeline.activity?.version == 3)
    }

    @Test("a timestamp more than 8 hours ahead is invalid; exactly 8 hours is accepted")
    func farFuture() throws {
        var timeline = Timeline()
        let latest = timeline.now + .hours(8)
        let rejection = timeline.rejection(of: Make.request(timestamp: latest + .microseconds(1)))
        #expect(rejection == .invalidTimestamp(timestamp: latest + .microseconds(1), latestAccepted: latest))
        #expect(rejection?.code == "invalid_timestamp")
        try timeline.send(Make.request(timestamp: timeline.now))
        #expect(timeline.rejection(of: Make.update(timestamp: latest + .seconds(1)))?.code == "invalid_timestamp")
        try timeline.send(Make.update(timestamp: latest))
        #expect(timeline.rejection(of: Make.end(timestamp: timeline.now + .hours(9)))?.code == "invalid_timestamp")
    }

    @Test("end tolerates an older timestamp")
    func endOlder() throws {
        var timeline = Timeline()
        try timeline.send(Make.request(timestamp: timeline.now))
        try timeline.send(Make.update(timestamp: timeline.now + .seconds(5)))
        try timeline.send(Make.end(timestamp: timeline.now - .minutes(1)))
        #expect(timeline.state == .ended)
        #expect(timeline.activity?.lastTimestamp == timeline.now + .seconds(5))
    }
}

@Suite("Rule 7: caps")
struct CapRuleTests {
    private func timeline(
        open: OpenCounts,
        app: AppRules = AppRules(maxOpen: 5, priorityBudgetPerHour: 10),
        global: Int = 100
    ) -> Timeline {
        var timeline = Timeline(app: app)
        timeline.context.open = open
        timeline.context.globalMaxOpen = global
        return timeline
    }

    @Test("the app's cap admits up to its limit, counting the request")
    func appCap() throws {
        var below = timeline(open: OpenCounts(app: 4, global: 4))
        try below.send(Make.request())
        var at = timeline(open: OpenCounts(app: 5, global: 5))
        let rejection = at.rejection(of: Make.request())
        #expect(rejection == .targetMaximumExceeded(limit: 5, count: 5))
        #expect(rejection?.code == "target_maximum_exceeded")
    }

    @Test("the global cap admits up to its limit")
    func globalCap() throws {
        var below = timeline(open: OpenCounts(app: 0, global: 99))
        try below.send(Make.request())
        var at = timeline(open: OpenCounts(app: 0, global: 100))
        #expect(at.rejection(of: Make.request()) == .globalMaximumExceeded(limit: 100, count: 100))
    }

    @Test("the device cap applies only when the request names a device and the app sets a per-device cap")
    func deviceCap() throws {
        let device = DeviceID(rawValue: "phone-1")!
        let rules = AppRules(maxOpen: 5, maxOpenPerDevice: 2, priorityBudgetPerHour: 10)
        var full = timeline(open: OpenCounts(app: 2, global: 2, device: 2), app: rules)
        #expect(
            full.rejection(of: Make.request(deviceID: device))
                == .deviceMaximumExceeded(deviceID: device, limit: 2, count: 2)
        )
        var anonymous = timeline(open: OpenCounts(app: 2, global: 2, device: 2), app: rules)
        try anonymous.send(Make.request())
        var uncapped = timeline(open: OpenCounts(app: 2, global: 2, device: 9))
        try uncapped.send(Make.request(deviceID: device))
    }

    @Test("only requests are checked against the caps")
    func onlyRequests() throws {
        var timeline = timeline(open: OpenCounts(app: 0, global: 0))
        try timeline.send(Make.request())
        timeline.context.open = OpenCounts(app: 50, global: 500)
        try timeline.send(Make.update())
        try timeline.send(Make.end())
    }
}

@Suite("Rule 8: update budget")
struct UpdateBudgetRuleTests {
    @Test("10 priority-10 updates an hour; the 11th without a priority is downgraded to 5 and recorded")
    func downgrade() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        for step in 1...10 {
            timeline.advance(.minutes(1))
            let events = try timeline.send(Make.update(Double(step)))
            #expect(
                events.first?.payload
                    == .updated(
                        .init(
                            content: content(Double(step)),
                            alert: nil,
                            priority: .high,
                            downgraded: false,
                            timestamp: nil
                        )
                    )
            )
        }
        timeline.advance(.minutes(1))
        let events = try timeline.send(Make.update(11))
        #expect(
            events.first?.payload
                == .updated(.init(content: content(11), alert: nil, priority: .low, downgraded: true, timestamp: nil))
        )
    }

    @Test("an explicit priority 10 over budget is refused with when to retry")
    func explicitHighRefused() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        let first = timeline.now + .minutes(1)
        for _ in 1...10 {
            timeline.advance(.minutes(1))
            try timeline.send(Make.update(priority: .high))
        }
        timeline.advance(.minutes(5))
        let rejection = timeline.rejection(of: Make.update(priority: .high))
        #expect(rejection == .pushBudgetExhausted(budget: 10, retryAfter: first + .hours(1) - timeline.now))
        #expect(rejection?.code == "push_budget_exhausted")
        // Priority 5 is always accepted and never counts.
        try timeline.send(Make.update(priority: .low))
        // The oldest update leaves the window an hour after it was sent: one more is allowed.
        timeline.now = first + .hours(1) + .microseconds(1)
        try timeline.send(Make.update(priority: .high))
        #expect(timeline.rejection(of: Make.update(priority: .high))?.code == "push_budget_exhausted")
    }

    @Test("priority 5 updates never count against the budget")
    func lowNeverCounts() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        for _ in 1...30 {
            timeline.advance(.seconds(10))
            try timeline.send(Make.update(priority: .low))
        }
        let events = try timeline.send(Make.update(priority: .high))
        #expect(events.count == 1)
    }

    @Test("an app flagged frequentUpdates gets 60 an hour")
    func frequentUpdates() throws {
        var timeline = Timeline(app: AppRules(maxOpen: 5, priorityBudgetPerHour: 10, frequentUpdates: true))
        try timeline.send(Make.request())
        for _ in 1...60 {
            timeline.advance(.seconds(30))
            try timeline.send(Make.update(priority: .high))
        }
        #expect(timeline.rejection(of: Make.update(priority: .high)) != nil)
    }
}

@Suite("Rule 9: alerts")
struct AlertRuleTests {
    @Test("an update's alert is stored in its event")
    func alertStored() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        let alert = Alert(title: "Delivered", body: "Your order is at the door", sound: "chime.aiff")
        let events = try timeline.send(Make.update(alert: alert))
        guard case .updated(let updated) = events.first?.payload else {
            Issue.record("expected an update")
            return
        }
        #expect(updated.alert == alert)
    }
}

@Suite("Time never goes backwards in a stream")
struct ClockOrderTests {
    @Test("a command decided with a clock reading before the last event is applied at that event's time")
    func clockBehindLastEvent() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        timeline.advance(.seconds(10))
        try timeline.send(Make.update(1))
        let lastEvent = timeline.now
        // Another server process read its clock 5 s earlier, then lost the race to commit.
        timeline.advance(.seconds(-5))
        let produced = try timeline.send(Make.update(2))
        #expect(produced.map(\.occurredAt) == [lastEvent])
        #expect(timeline.activity?.version == 3)
    }
}

@Suite("Remote start: a request the device starts on a push-to-start")
struct RemoteStartRuleTests {
    static func request(token: String?) -> Command {
        guard case .request(var request) = Make.request(deviceID: DeviceID(rawValue: "phone-1")) else {
            preconditionFailure("a request")
        }
        request.remoteStart = RemoteStart(
            pushToStartToken: token,
            alert: Alert(title: "Order placed", body: "On its way")
        )
        return .request(request)
    }

    @Test("with the device's push-to-start token it is accepted, and the event keeps the token and the alert")
    func accepted() throws {
        var timeline = Timeline()
        try timeline.send(Self.request(token: "aa01"))
        guard case .requested(let requested) = timeline.events.last?.payload else {
            Issue.record("no request event")
            return
        }
        #expect(requested.remoteStart?.pushToStartToken == "aa01")
        #expect(requested.remoteStart?.alert.title == "Order placed")
        #expect(timeline.state == .active)
    }

    @Test(
        "the device's push-to-start budget counts its remote starts in any rolling hour; the next waits for the oldest to leave it"
    )
    func budget() throws {
        var rules = AppRules(defaultsOf: .standard)
        rules.pushToStartBudgetPerHour = 2
        var timeline = Timeline(app: rules)
        let start = timeline.now
        timeline.context.remoteStarts = [start - .seconds(3_700), start - .seconds(1_800), start - .seconds(600)]
        let refused = timeline.rejection(of: Self.request(token: "aa01"))
        #expect(
            refused
                == .pushToStartBudgetExhausted(
                    deviceID: DeviceID(rawValue: "phone-1"),
                    budget: 2,
                    retryAfter: .seconds(1_800)
                )
        )
        #expect(refused?.code == "push_to_start_budget_exhausted")
        #expect(refused.map { Rejection(code: $0.code, details: $0.details) } == refused)
        // An update without a remote start is not counted against it, nor is a request the app starts.
        guard case .request(var local) = Self.request(token: "aa01") else { return }
        local.remoteStart = nil
        #expect(timeline.rejection(of: .request(local)) == nil)

        var later = Timeline(now: start + .seconds(1_800), app: rules)
        later.context.remoteStarts = timeline.context.remoteStarts
        try later.send(Self.request(token: "aa01"))
        #expect(later.state == .active)
    }

    @Test("without one it is refused push_to_start_token_missing, naming the device and the type; nothing is appended")
    func missingToken() {
        var timeline = Timeline()
        let rejection = timeline.rejection(of: Self.request(token: nil))
        #expect(
            rejection == .pushToStartTokenMissing(deviceID: DeviceID(rawValue: "phone-1"), activityType: "delivery")
        )
        #expect(rejection.map { Rejection(code: $0.code, details: $0.details) } == rejection)
        #expect(timeline.events.isEmpty)
    }
}

@Suite("Broadcast channels: an activity whose pushes go on one of the app's channels")
struct BroadcastChannelRuleTests {
    static func request(on channel: BroadcastChannel) -> Command {
        var request = Command.Request(
            activityType: "match",
            content: ActivityContent(contentState: .empty),
            pushType: .channel
        )
        request.channel = channel
        return .request(request)
    }

    @Test("a channel the app has (with its storage policy) is kept in the request's event")
    func known() throws {
        var timeline = Timeline()
        let channel = BroadcastChannel(id: "dHN0LXNyY2gtY2hubA==", storagePolicy: .mostRecent)
        try timeline.send(Self.request(on: channel))
        guard case .requested(let requested) = timeline.events.first?.payload else {
            Issue.record("no request")
            return
        }
        #expect(requested.channel == channel)
        #expect(requested.pushType == .channel)
    }

    @Test("a channel the app does not have is refused channel_not_found, naming it; nothing is appended")
    func unknown() {
        var timeline = Timeline()
        let rejection = timeline.rejection(of: Self.request(on: BroadcastChannel(id: "bm9uZQ==", storagePolicy: nil)))
        #expect(rejection == .channelNotFound(channelID: "bm9uZQ=="))
        #expect(rejection?.code == "channel_not_found")
        #expect(rejection.map { Rejection(code: $0.code, details: $0.details) } == rejection)
        #expect(timeline.events.isEmpty)
    }

    @Test("Apple's numbers for the message storage policies", arguments: MessageStoragePolicy.allCases)
    func storagePolicies(_ policy: MessageStoragePolicy) {
        #expect(MessageStoragePolicy(apnsValue: policy.apnsValue) == policy)
        #expect(policy.apnsValue == (policy == .none ? 0 : 1))
    }
}

@Suite("Widget reloads asked by an update or end: kept in the event, for an activity that names its device")
struct WidgetReloadRuleTests {
    @Test("an update and an end that ask for a widget reload keep the ask in their events")
    func kept() throws {
        var timeline = Timeline()
        try timeline.send(Make.request(deviceID: DeviceID(rawValue: "phone-1")))
        let reload = WidgetReload(widgetKinds: ["OrderStatus"])
        try timeline.send(.update(.init(content: content(2), widgetReload: reload)))
        try timeline.send(.end(.init(widgetReload: WidgetReload())))
        #expect(timeline.events.map(\.widgetReload) == [nil, reload, WidgetReload()])
    }

    @Test("without a device there are no widgets to reload: refused widget_reload_without_device; nothing appended")
    func withoutDevice() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        for command: Command in [
            .update(.init(content: content(2), widgetReload: WidgetReload())),
            .end(.init(widgetReload: WidgetReload(widgetKinds: ["OrderStatus"]))),
        ] {
            let rejection = timeline.rejection(of: command)
            #expect(rejection == .widgetReloadWithoutDevice && rejection?.code == "widget_reload_without_device")
            #expect(rejection.map { Rejection(code: $0.code, details: $0.details) } == rejection)
        }
        #expect(timeline.events.count == 1)
        // Without the ask, the same update goes.
        try timeline.send(Make.update())
        #expect(timeline.events.count == 2)
    }
}
