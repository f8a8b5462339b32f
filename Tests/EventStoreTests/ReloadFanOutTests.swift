import ActivityLifecycle
import CanonicalJSON
import Foundation
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("Reload requests and their fan-out: counted at once, walked a page at a time, paced per device")
struct ReloadFanOutTests {
    static let all = Set(0..<DeliveryShard.count)
    static let widget = WidgetInfo(kind: "Score", family: "systemSmall")
    static let other = WidgetInfo(kind: "Standings", family: "systemMedium")

    static func device(_ index: Int) -> DeviceID { DeviceID(rawValue: "phone-\(index)")! }

    /// `count` devices with a widget token (the even ones also with the other kind).
    static func registerWidgets(_ count: Int, _ fixture: StoreFixture, _ store: EventStore) async throws {
        for index in 0..<count {
            _ = try await store.registerReloadToken(
                String(format: "%064x", index),
                widgets: index.isMultiple(of: 2) ? [widget, other] : [widget],
                for: ReloadTokenSlot(app: fixture.app, device: device(index), kind: .widgets)
            )
        }
    }

    /// Takes and records as delivered until nothing is left, `limit` at a time, each page's
    /// cursor moved with its outcomes; every send.
    static func drain(_ store: EventStore, limit: Int, now: Timestamp) async throws -> [ReloadSend] {
        var sent: [ReloadSend] = []
        while true {
            let work = try await store.takeReloads(in: all, pausing: [], limit: limit, now: now)
            sent += work.sends
            try await store.recordReloads(
                work.sends.map { Self.delivered($0, at: now) },
                cursors: cursors(of: work)
            )
            if work.sends.isEmpty && !work.moreWaiting { return sent }
        }
    }

    /// Widget reloads unpaced: every request goes at once.
    static func pacingOff(_ store: EventStore) async throws {
        try await store.withConnection {
            _ = try $0.execute("UPDATE apps SET widget_reload_interval_seconds = 0")
        }
    }

    /// A reload sent and delivered at `now`, as a worker records it (with its `apns-id`).
    static func delivered(_ send: ReloadSend, at now: Timestamp) -> ReloadOutcome {
        ReloadOutcome(send: send, kind: .delivered, apnsID: UUID().uuidString, status: 200, attemptedAt: now)
    }

    /// Where the work's fan-outs stand once all its pages are recorded.
    static func cursors(of work: ReloadWork) -> [ReloadFanout: ReloadFanout.Position] {
        Dictionary(work.pages.map { ($0.fanout, $0.through) }) { _, later in later }
    }

    @Test("a reload to every device with a kind counts them at once, and is walked in pages until each got it once")
    func everywhere() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(40, fixture, store)
            let accepted = try await store.requestReload(
                ReloadTarget(kind: .widgets, widgetKinds: ["Standings"]),
                for: fixture.app,
                from: .api(nil)
            )
            #expect(accepted.targets == 20 && !accepted.isReplay)
            let sent = try await Self.drain(store, limit: 7, now: fixture.now)
            #expect(sent.count == 20 && Set(sent.map(\.slot.device)).count == 20)
            #expect(sent.allSatisfy { $0.reload == accepted.id && $0.attempt == 1 })
            #expect(Set(sent.map(\.slot.device)) == Set(stride(from: 0, to: 40, by: 2).map(Self.device)))
            let status = try #require(try await store.reloadStatus(accepted.id, of: fixture.app))
            #expect(status.fannedOut && status.devices == ["delivered": 20])
        }
    }

    @Test("named devices: only those with a token of the kind; the others are not counted")
    func named() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(10, fixture, store)
            let door = ReloadKind.control("Door")
            _ = try await store.registerReloadToken(
                "aa01",
                widgets: [],
                for: .init(app: fixture.app, device: Self.device(3), kind: door)
            )
            let widgets = try await store.requestReload(
                ReloadTarget(kind: .widgets, devices: [Self.device(1), Self.device(2), Self.device(99)]),
                for: fixture.app,
                from: .api(nil)
            )
            let control = try await store.requestReload(
                ReloadTarget(kind: door, devices: [Self.device(1), Self.device(3)]),
                for: fixture.app,
                from: .api(nil)
            )
            #expect(widgets.targets == 2 && control.targets == 1)
            let sent = try await Self.drain(store, limit: 100, now: fixture.now)
            #expect(
                Set(sent.map { "\($0.slot.device) \($0.slot.kind.pushType)" }) == [
                    "phone-1 widgets", "phone-2 widgets", "phone-3 controls",
                ]
            )
        }
    }

    @Test(
        "within the interval a second request is coalesced, and goes when the interval ends, carrying the newer request"
    )
    func coalesced() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(3, fixture, store)
            let first = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(nil))
            #expect(try await Self.drain(store, limit: 10, now: fixture.now).count == 3)
            let later = fixture.now + .seconds(60)
            let second = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(nil))
            #expect(try await Self.drain(store, limit: 10, now: later).isEmpty)
            let status = try #require(try await store.reloadStatus(second.id, of: fixture.app))
            #expect(status.fannedOut && status.devices == ["coalesced": 3])
            let work = try await store.takeReloads(in: Self.all, pausing: [], limit: 10, now: later)
            #expect(work.sends.isEmpty && work.nextDue == fixture.now + .seconds(1800))

            let due = try await Self.drain(store, limit: 10, now: fixture.now + .seconds(1800))
            #expect(due.count == 3 && due.allSatisfy { $0.reload == second.id })
            #expect(try await store.reloadStatus(second.id, of: fixture.app)?.devices == ["delivered": 3])
            #expect(try await store.reloadStatus(first.id, of: fixture.app)?.devices == ["delivered": 3])
        }
    }

    @Test(
        "nothing is written as a reload leaves: the fan-out's cursor moves with its outcomes, so a worker that takes over sends again only the pages unrecorded"
    )
    func resumedFromTheCursor() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(9, fixture, store)
            try await Self.pacingOff(store)
            let request = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(nil))
            // One worker takes every device in pages of 2, reading on from its own positions.
            var reading: [ReloadFanout: ReloadFanout.Position] = [:]
            var pages: [ReloadPage] = []
            while true {
                let work = try await store.takeReloads(
                    in: Self.all,
                    pausing: [],
                    limit: 2,
                    now: fixture.now,
                    reading: reading
                )
                guard !work.pages.isEmpty else { break }
                pages += work.pages
                reading.merge(Self.cursors(of: work)) { _, later in later }
            }
            let sends = pages.flatMap(\.sends)
            #expect(sends.count == 9 && Set(sends.map(\.slot)).count == 9)
            // Only the first page is recorded before it stops.
            let first = pages[0]
            try await store.recordReloads(
                first.sends.map { Self.delivered($0, at: fixture.now) },
                cursors: [first.fanout: first.through]
            )
            // The worker that takes over sends the rest again, from the recorded cursor.
            let again = try await Self.drain(store, limit: 100, now: fixture.now)
            #expect(Set(again.map(\.slot)) == Set(sends.map(\.slot)).subtracting(first.sends.map(\.slot)))
            let status = try #require(try await store.reloadStatus(request.id, of: fixture.app))
            #expect(status.fannedOut && status.devices == ["delivered": 9])
        }
    }

    @Test(
        "paced, a device recorded before its worker stopped is not sent or coalesced again when its page is read again"
    )
    func recordedBeforeTheCursor() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(4, fixture, store)
            let request = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(nil))
            let work = try await store.takeReloads(in: Self.all, pausing: [], limit: 10, now: fixture.now)
            #expect(work.sends.count == 4)
            // Two answers recorded, the cursors not moved (their pages still had reloads on their way).
            try await store.recordReloads(
                work.sends.prefix(2).map { Self.delivered($0, at: fixture.now) }
            )
            let again = try await Self.drain(store, limit: 10, now: fixture.now + .seconds(1))
            #expect(Set(again.map(\.slot)) == Set(work.sends.dropFirst(2).map(\.slot)))
            #expect(try await store.reloadStatus(request.id, of: fixture.app)?.devices == ["delivered": 4])
        }
    }

    @Test(
        "a reload on its way paces its slot: a request meanwhile is coalesced behind it, and its due reload is not taken twice"
    )
    func pacedBehindOnItsWay() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(1, fixture, store)
            try await Self.pacingOff(store)
            _ = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(nil))
            let first = try await store.takeReloads(in: Self.all, pausing: [], limit: 10, now: fixture.now)
            let send = try #require(first.sends.first)
            let onItsWay = [
                send.slot: ReloadOnItsWay(.init(reload: send.reload, attempt: send.attempt), sentAt: fixture.now)
            ]
            try await store.recordReloads([], cursors: Self.cursors(of: first))
            let second = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(nil))
            let behind = try await store.takeReloads(
                in: Self.all,
                pausing: [],
                limit: 10,
                now: fixture.now,
                onTheirWay: onItsWay
            )
            #expect(behind.sends.isEmpty && behind.nextDue == fixture.now)
            #expect(try await store.reloadStatus(second.id, of: fixture.app)?.devices == ["coalesced": 1])
            try await store.recordReloads([], cursors: Self.cursors(of: behind))
            // The first is answered; until that is recorded, the second waits behind it.
            #expect(
                try await store.takeReloads(
                    in: Self.all,
                    pausing: [],
                    limit: 10,
                    now: fixture.now,
                    onTheirWay: onItsWay
                )
                .sends.isEmpty
            )
            try await store.recordReloads([Self.delivered(send, at: fixture.now)])
            let due = try await store.takeReloads(in: Self.all, pausing: [], limit: 10, now: fixture.now)
            #expect(due.sends.map(\.reload) == [second.id] && due.sends.first?.origin == .due)
            // Taken from its due time, it stays written until its answer is recorded: a worker
            // that knows it on its way does not take it again; one that does not, does.
            let dueSend = try #require(due.sends.first)
            let dueOnItsWay = [
                dueSend.slot: ReloadOnItsWay(
                    .init(reload: dueSend.reload, attempt: dueSend.attempt),
                    sentAt: fixture.now
                )
            ]
            #expect(
                try await store.takeReloads(
                    in: Self.all,
                    pausing: [],
                    limit: 10,
                    now: fixture.now,
                    onTheirWay: dueOnItsWay
                )
                .sends.isEmpty
            )
            #expect(
                try await store.takeReloads(in: Self.all, pausing: [], limit: 10, now: fixture.now).sends == [dueSend]
            )
            try await store.recordReloads([Self.delivered(dueSend, at: fixture.now)])
            #expect(try await Self.drain(store, limit: 10, now: fixture.now + .seconds(5)).isEmpty)
            #expect(try await store.reloadStatus(second.id, of: fixture.app)?.devices == ["delivered": 1])
        }
    }

    @Test("a retry goes again after its backoff; a dead token leaves its slot, and the change is kept")
    func retriesAndDeadTokens() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(2, fixture, store)
            let request = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(nil))
            let sends = try await store.takeReloads(in: Self.all, pausing: [], limit: 10, now: fixture.now).sends
            let retry = try #require(sends.first { $0.slot.device == Self.device(0) })
            let dead = try #require(sends.first { $0.slot.device == Self.device(1) })
            try await store.recordReloads([
                ReloadOutcome(
                    send: retry,
                    kind: .retrying,
                    retryAt: fixture.now + .seconds(2),
                    status: 503,
                    attemptedAt: fixture.now
                ),
                ReloadOutcome(
                    send: dead,
                    kind: .tokenInvalidated,
                    status: 410,
                    reason: "Unregistered",
                    attemptedAt: fixture.now,
                    invalidSince: fixture.now
                ),
            ])
            #expect(try await store.takeReloads(in: Self.all, pausing: [], limit: 10, now: fixture.now).sends.isEmpty)
            let again = try await store.takeReloads(
                in: Self.all,
                pausing: [],
                limit: 10,
                now: fixture.now + .seconds(2)
            ).sends
            #expect(again == [ReloadSend(slot: retry.slot, token: retry.token, reload: request.id, attempt: 2)])
            let slot = ReloadTokenSlot(app: fixture.app, device: Self.device(1), kind: .widgets)
            let token = try #require(try await store.reloadToken(of: slot))
            #expect(
                token.current == nil && token.changes.last?.kind == .invalidated
                    && token.changes.last?.reason == "Unregistered"
            )
            #expect(
                try await store.reloadStatus(request.id, of: fixture.app)?.devices == [
                    "retrying": 1, "token_invalidated": 1,
                ]
            )
        }
    }

    @Test("an app paused is left alone: its due reloads and fan-outs wait")
    func paused() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(3, fixture, store)
            _ = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(nil))
            let held = try await store.takeReloads(in: Self.all, pausing: [fixture.app], limit: 10, now: fixture.now)
            #expect(held.sends.isEmpty)
            #expect(try await Self.drain(store, limit: 10, now: fixture.now).count == 3)
        }
    }

    @Test("a reload request's idempotency key expires with the window, as a command's does")
    func idempotencyKeyExpires() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let first = try await store.requestReload(
                ReloadTarget(kind: .widgets),
                for: fixture.app,
                from: .api(IdempotencyKey(key: "k", requestDigest: Array(repeating: 1, count: 32)))
            )
            #expect(try await store.expireIdempotencyKeys(olderThan: .seconds(24 * 3600)) == 0)
            try await store.withConnection {
                _ = try $0.execute("UPDATE reload_requests SET requested_at = requested_at - interval '25 hours'")
            }
            #expect(try await store.expireIdempotencyKeys(olderThan: .seconds(24 * 3600)) == 1)
            let later = try await store.requestReload(
                ReloadTarget(kind: .widgets),
                for: fixture.app,
                from: .api(IdempotencyKey(key: "k", requestDigest: Array(repeating: 2, count: 32)))
            )
            #expect(!later.isReplay && later.id != first.id)
        }
    }

    @Test("an idempotency key replays the first answer; with another request it is refused; an event asks once")
    func idempotency() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(2, fixture, store)
            let key = IdempotencyKey(key: "score-1", requestDigest: Array(repeating: 1, count: 32))
            let first = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(key))
            try await Self.registerWidgets(4, fixture, store)
            let again = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(key))
            #expect(again.isReplay && again.id == first.id && again.targets == 2)
            await #expect(throws: EventStoreError.idempotencyKeyReused(key: "score-1")) {
                _ = try await store.requestReload(
                    ReloadTarget(kind: .widgets),
                    for: fixture.app,
                    from: .api(IdempotencyKey(key: "score-1", requestDigest: Array(repeating: 2, count: 32)))
                )
            }
            let stream = fixture.stream("order-1")
            let asked = try await store.requestReload(
                ReloadTarget(kind: .widgets, devices: [Self.device(0)]),
                for: fixture.app,
                from: .activity(stream, version: 2)
            )
            let askedAgain = try await store.requestReload(
                ReloadTarget(kind: .widgets, devices: [Self.device(0)]),
                for: fixture.app,
                from: .activity(stream, version: 2)
            )
            #expect(!asked.isReplay && askedAgain.isReplay && askedAgain.id == asked.id)
            let status = try #require(try await store.reloadStatus(asked.id, of: fixture.app))
            #expect(status.activity == stream.activity && status.version == 2)
            #expect(try await store.reloadStatus(asked.id, of: AppID(rawValue: "com.example.other")!) == nil)
        }
    }

    @Test(
        "verify's check: the slots agree with their changes through registrations, removals and deaths; a slot or outcome out of line is found"
    )
    func checked() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await Self.registerWidgets(4, fixture, store)
            let slot = ReloadTokenSlot(app: fixture.app, device: Self.device(0), kind: .widgets)
            _ = try await store.removeReloadToken(
                of: ReloadTokenSlot(app: fixture.app, device: Self.device(1), kind: .widgets)
            )
            let request = try await store.requestReload(ReloadTarget(kind: .widgets), for: fixture.app, from: .api(nil))
            let sends = try await store.takeReloads(in: Self.all, pausing: [], limit: 10, now: fixture.now).sends
            // Device 0 registers a new token before APNs' answer declares the old one dead: it keeps the new one.
            _ = try await store.registerReloadToken("abcd", widgets: [Self.widget], for: slot)
            let dead = try #require(sends.first { $0.slot == slot })
            let other = try #require(sends.first { $0.slot.device == Self.device(2) })
            try await store.recordReloads([
                ReloadOutcome(
                    send: dead,
                    kind: .tokenInvalidated,
                    status: 410,
                    reason: "Unregistered",
                    attemptedAt: fixture.now,
                    invalidSince: Timestamp.now() - .seconds(3600)
                ),
                ReloadOutcome(
                    send: other,
                    kind: .tokenInvalidated,
                    status: 410,
                    reason: "Unregistered",
                    attemptedAt: fixture.now,
                    invalidSince: Timestamp.now() + .seconds(60)
                ),
            ])
            #expect(try await store.reloadToken(of: slot)?.current?.token == "abcd")
            let clean = try await store.checkReloads()
            #expect(clean.problems == [] && clean.slots == 2 && clean.requests == 1 && clean.outcomes == 2)

            try await store.withConnection { connection in
                _ = try connection.execute("DELETE FROM reload_tokens WHERE device_id = 'phone-3'")
                _ = try connection.execute(
                    """
                    INSERT INTO reload_deliveries (reload_id, app_id, device_id, push_type, control_kind, outcome,
                        attempt, attempted_at)
                    VALUES (\(request.id + 1), \(fixture.app.rawValue), 'phone-3', 'widgets', '', 'delivered', 1, now())
                    """
                )
            }
            let found = try await store.checkReloads().problems
            #expect(found.count == 2)
            #expect(found.contains { $0.contains("phone-3 holds no token, its changes say the token of change") })
            #expect(found.contains { $0.contains("1 outcomes of reload \(request.id + 1)") })
        }
    }
}
