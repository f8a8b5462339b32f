import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import Foundation
import LivelineHTTP
import LocalAPNs
import TestSupport
import Testing

@Suite("An activity's deliveries over the API: the list, newest first, and the last one on the activity")
struct DeliveriesAPITests {
    @Test("a delivered update shows in GET …/deliveries and as the activity's lastDelivery; an unknown activity is 404")
    func deliveries() async throws {
        let secret = try SecretKey(SecretKey.random())
        try await APIFixture.run(secretKey: secret) { api in
            let server = try await LocalAPNs.start()
            let app = try await api.makeApp()
            try await api.setCredentials(of: app.id, registeredWith: server)
            let client = try APNsClient(
                configuration: .local(baseURL: server.baseURL, trustedCertificatePEM: server.certificatePEM),
                logger: TestDatabase.logger
            )
            let worker = DeliveryWorker(
                store: api.store,
                client: client,
                secretKey: secret,
                listener: nil,
                logger: TestDatabase.logger
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                _ = try await app.client.requestActivity(
                    body: .json(.init(activityId: activityID("d1"), activityType: "T", contentState: .empty))
                ).created
                let token = String(repeating: "5e", count: 32)
                _ = try await app.client.registerPushToken(
                    path: .init(activityId: "d1"),
                    body: .json(.init(pushToken: token))
                ).ok
                _ = try await app.client.updateActivity(
                    path: .init(activityId: "d1"),
                    body: .json(.init(contentState: JSONObject(["step": .number(2)])))
                ).ok
                var deliveries: [Components.Schemas.Delivery] = []
                for _ in 0..<200 where deliveries.first?.outcome != .delivered {
                    try await Task.sleep(for: .milliseconds(50))
                    deliveries = try await app.client.listActivityDeliveries(path: .init(activityId: "d1")).ok.body.json
                        .deliveries
                }
                let delivered = try #require(deliveries.first)
                #expect(delivered.outcome == .delivered)
                #expect(delivered.version == 3 && delivered.attempt == 1 && delivered.status == 200)
                #expect(delivered.deviceToken == token)
                #expect(delivered.apnsId == server.received.first?.apnsID)
                let activity = try await app.client.getActivity(path: .init(activityId: "d1")).ok.body.json
                #expect(activity.lastDelivery == delivered)
                #expect(activity.version == 3)

                let unknown = try await app.client.listActivityDeliveries(path: .init(activityId: "nope"))
                #expect(try unknown.notFound.body.applicationProblemJson.code == "activity_not_found")
                group.cancelAll()
            }
            try await client.shutdown()
            try await server.shutdown()
        }
    }
}
