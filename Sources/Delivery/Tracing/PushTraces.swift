import ActivityLifecycle
import CanonicalJSON
import EventStore
import Tracing

/// The spans of pushes APNs answered, made once the answer came, with the times it was sent and
/// answered:
///
/// - `push <event>`: the push (`start`, `update`, `end`; kind, attempt, `apns-id`, APNs' status
///   and reason, the outcome). A first attempt of an event that a sampled request appended joins
///   that request's trace (the trace context read with the event), starting when the event was
///   committed, so the queue's wait shows; a retry, and a push held while its app was suspended
///   and sent again, start a trace of their own, linked to the request's. A push of an event of
///   a deadline or a device starts a trace of its own; one of an unsampled request's, none.
/// - `APNs answer`, inside it: from the request leaving to APNs' answer.
struct PushTraces: Sendable {
    /// A push APNs answered: what was sent, what was recorded of it, and when.
    struct Answered: Sendable {
        let send: DeliveryBook.Send
        let record: DeliveryRecord
        let sentAt: CanonicalJSON.Timestamp
        let answeredAt: CanonicalJSON.Timestamp
    }

    /// Makes the spans of `answered`.
    func record(_ answered: [Answered]) {
        for push in answered {
            switch push.send.trace {
            case .none: continue
            case .request(let context): span(of: push, requestedIn: context)
            case .own: span(of: push, requestedIn: nil)
            }
        }
    }

    private func span(of push: Answered, requestedIn request: TraceContext?) {
        let send = push.send
        let joinsRequest = request != nil && send.attempt == 1 && !send.resumed
        let event = send.request.event ?? send.request.pushType.rawValue
        let span = InstrumentationSystem.tracer.startSpan(
            "push \(event)",
            context: joinsRequest ? request!.serviceContext : .topLevel,
            ofKind: .producer,
            at: Self.instant(joinsRequest ? min(send.committedAt, push.sentAt) : push.sentAt)
        )
        // A trace of its own not sampled: nothing more to make.
        guard span.isRecording else { return span.end() }
        if let request, !joinsRequest {
            span.addLink(SpanLink(context: request.serviceContext, attributes: [:]))
        }
        let record = push.record
        span.updateAttributes { attributes in
            attributes["liveline.app.id"] = send.stream.app.rawValue
            attributes["liveline.activity.id"] = send.stream.activity.rawValue
            attributes["liveline.event.position"] = send.position
            attributes["liveline.event.version"] = send.version
            attributes["liveline.push.kind"] = event
            attributes["liveline.push.attempt"] = send.attempt
            attributes["liveline.push.outcome"] = record.outcome.rawValue
            attributes["apns.id"] = send.request.apnsID
            attributes["apns.priority"] = send.request.priority.rawValue
            attributes["apns.status"] = record.status
            attributes["apns.reason"] = record.reason
        }
        let wait = InstrumentationSystem.tracer.startSpan(
            "APNs answer",
            context: span.context,
            ofKind: .client,
            at: Self.instant(push.sentAt)
        )
        wait.updateAttributes { attributes in
            attributes["http.request.method"] = "POST"
            attributes["http.response.status_code"] = record.status
        }
        if record.outcome != .delivered {
            let status = SpanStatus(code: .error, message: record.reason ?? record.outcome.rawValue)
            wait.setStatus(status)
            span.setStatus(status)
        }
        wait.end(at: Self.instant(push.answeredAt))
        span.end(at: Self.instant(push.answeredAt))
    }

    private static func instant(_ time: CanonicalJSON.Timestamp) -> DefaultTracerClock.Timestamp {
        DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: UInt64(max(0, time.microsecondsSince1970)) * 1_000)
    }
}
