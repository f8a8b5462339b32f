import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import LivelineHTTP
import NIOCore
import Testing

@Suite("The erasure routes: an activity or a device erased at the app's request, refusals that say why")
struct ErasureAPITests {
    /// A dismissed activity of `device` with a push token, requested and ended through the API.
    static func dismissedActivity(_ id: String, device: String, in api: APIFixture, key: String) async throws {
        let requested = try await api.send(
            .post,
            "/v1/activities",
            key: key,
            body: Array(
                #"{"activityId":"\#(id)","activityType":"Ride","deviceId":"\#(device)","attributes":{"rider":"Ada Lovelace"},"contentState":{"pickup":"12 Crescent Road"}}"#
                    .utf8
            )
        )
        #expect(requested.status == .created)
        let token = try await api.send(
            .put,
            "/v1/activities/\(id)/push-token",
            key: key,
            body: Array(#"{"pushToken":"\#(String(repeating: "be", count: 32))"}"#.utf8)
        )
        #expect(token.status == .ok)
        let ended = try await api.send(
            .post,
            "/v1/activities/\(id)/end",
            key: key,
            body: Array(#"{"dismissal":{"policy":"immediate"}}"#.utf8)
        )
        #expect(ended.status == .ok)
    }

    @Test(
        "a device erased: 202, finished, its activities read back redacted; GET reads the erasure, another app's is not found"
    )
    func deviceErased() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            try await Self.dismissedActivity("ride-1", device: "phone-9", in: api, key: app.key.key)
            let erasure = try await app.client.requestErasure(
                body: .json(.init(deviceId: DeviceID(rawValue: "phone-9")))
            )
            .accepted.body.json
            #expect(erasure.scope == .device && erasure.activities == 1 && erasure.erased == 1)
            #expect(erasure.finishedAt != nil && erasure.requestedBy == .appApi)
            let erasedDevice = try #require(erasure.erasedDeviceId)
            #expect(erasedDevice.rawValue.hasPrefix("erased:"))
            let activity = try await app.client.getActivity(path: .init(activityId: "ride-1"))
                .ok.body.json
            #expect(activity.deviceId == erasedDevice)
            #expect(activity.contentState == JSONObject(["pickup": .string("•••")]))
            #expect(activity.attributes == JSONObject(["rider": .string("•••")]))
            let read = try await app.client.getErasure(path: .init(erasureId: erasure.erasureId)).ok.body.json
            #expect(read.erasureId == erasure.erasureId && read.finishedAt == erasure.finishedAt)
            // Nothing of the device is left to erase.
            let again = try await api.send(
                .post,
                "/v1/erasures",
                key: app.key.key,
                body: Array(#"{"deviceId":"phone-9"}"#.utf8)
            )
            #expect(again.status == .notFound)
            #expect(try problem(again).code == "device_not_found")

            let other = try await api.makeApp()
            let elsewhere = try await api.send(.get, "/v1/erasures/\(erasure.erasureId)", key: other.key.key)
            #expect(elsewhere.status == .notFound)
            #expect(try problem(elsewhere).code == "erasure_not_found")
            #expect(
                try await api.send(.get, "/v1/erasures/\(erasure.erasureId)", key: APIFixture.adminKey).status
                    == .forbidden
            )
        }
    }

    @Test(
        "refused: an activity still on screen (409 with its id), a device nothing names (404), neither or both named (422)"
    )
    func refusals() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let open = try await api.send(
                .post,
                "/v1/activities",
                key: app.key.key,
                body: Array(#"{"activityId":"open-1","activityType":"Ride","contentState":{}}"#.utf8)
            )
            #expect(open.status == .created)
            let notDismissed = try await api.send(
                .post,
                "/v1/erasures",
                key: app.key.key,
                body: Array(#"{"activityId":"open-1"}"#.utf8)
            )
            #expect(notDismissed.status == .conflict)
            let conflict = try problem(notDismissed)
            #expect(conflict.code == "activity_not_dismissed")
            #expect(conflict.detail("activityIds") == .array([.string("open-1")]))
            let unknown = try await api.send(
                .post,
                "/v1/erasures",
                key: app.key.key,
                body: Array(#"{"deviceId":"nobody"}"#.utf8)
            )
            #expect(unknown.status == .notFound)
            #expect(try problem(unknown).code == "device_not_found")
            for body in [#"{}"#, #"{"activityId":"open-1","deviceId":"phone-1"}"#] {
                let invalid = try await api.send(.post, "/v1/erasures", key: app.key.key, body: Array(body.utf8))
                #expect(invalid.status == .unprocessableContent, "\(body)")
                #expect(try problem(invalid).code == "invalid_erasure")
            }
            #expect(
                try await api.store.activity(StreamID(app: app.id, activity: ActivityID(rawValue: "open-1")!)) != nil
            )
        }
    }
}
