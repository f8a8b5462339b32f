import ActivityLifecycle
import CanonicalJSON
import EventStore
import Testing

@testable import Delivery

@Suite("Which trace a push's spans go to, from its event")
struct PushTraceTests {
    static func event(_ cause: Cause, traced: Bool) -> StoredEvent {
        StoredEvent(
            position: 7,
            stream: StreamID(app: AppID(rawValue: "app")!, activity: ActivityID(rawValue: "a")!),
            event: ActivityEvent(
                version: 2,
                occurredAt: Timestamp(microsecondsSince1970: 0),
                cause: cause,
                payload: .started
            ),
            recordedAt: Timestamp(microsecondsSince1970: 0),
            traceContext: traced
                ? TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: nil)
                : nil
        )
    }

    @Test(
        "a sampled request's event joins its trace; an unsampled one's is not traced; a deadline's or a device's has its own"
    )
    func fromTheEvent() {
        #expect(PushTrace(of: Self.event(.app, traced: true)) == .request(Self.event(.app, traced: true).traceContext!))
        #expect(PushTrace(of: Self.event(.app, traced: false)) == PushTrace.none)
        #expect(PushTrace(of: Self.event(.system, traced: false)) == .own)
        #expect(PushTrace(of: Self.event(.device, traced: false)) == .own)
    }
}
