import ActivityLifecycle
import CanonicalJSON
import EventStore

/// Sending: which pushes go now, what APNs' answer to each means, and the starts that go only
/// once their `sending` record is written.
extension DeliveryBook {
    /// Pushes that may go now (at most `limit`), on lanes with nothing on the wire. Pushes that
    /// must not go are settled here: the app has no credentials or is suspended (then held), the
    /// token is dead, or the push expired. A lane waits while its stream is unreadable, or while
    /// its held pushes are loaded to be sent first.
    ///
    /// It looks at the waiting streams only until `limit` pushes go (a backlog of thousands is
    /// not walked on every turn of the loop), and notes the earliest retry time it passes by.
    mutating func takeReady(at now: Timestamp, limit: Int) -> [Send] {
        var sends: [Send] = []
        for stream in announced {
            guard sends.count < limit else { break }
            announced.remove(stream)
            guard let push = lanes[stream]?.onTheWire, let credentials = apps[stream.app]?.credentials else { continue }
            inFlight += 1
            sends.append(Send(push, of: stream, credentials: credentials))
        }
        if let due = nextRetry, due <= now { nextRetry = nil }
        // Streams leaving `waiting`, and pushes refused: changed after the walk, so that the set
        // walked is never copied.
        var leaving: [StreamID] = []
        var refused: [(StreamID, ActivityLane.Push, DeliveryRecord.Outcome, String?)] = []
        for stream in waiting {
            guard sends.count < limit else { break }
            guard shards.sends(stream), let app = apps[stream.app], unreadable[stream] == nil else { continue }
            if held[stream].map({ !$0.offered }) ?? false, app.resumes { continue }
            guard let push = lanes[stream]?.next(at: now) else {
                if let lane = lanes[stream], let retried = lane.waiting {
                    if lane.onTheWire == nil { nextRetry = min(nextRetry ?? retried.notBefore, retried.notBefore) }
                } else {
                    leaving.append(stream)
                }
                continue
            }
            leaving.append(stream)
            if let (outcome, reason) = refusal(of: push, of: stream, app: app, at: now) {
                refused.append((stream, push, outcome, reason))
                continue
            }
            guard let credentials = app.credentials else { continue }
            if push.request.startsActivity && push.attempts == 0 {
                // Recorded before it goes, so that no worker ever sends it twice.
                record(push, of: stream, .sending, at: now)
                announcing.insert(stream)
                continue
            }
            inFlight += 1
            sends.append(Send(push, of: stream, credentials: credentials))
        }
        for stream in leaving { waiting.remove(stream) }
        for (stream, push, outcome, reason) in refused {
            record(push, of: stream, outcome, reason: reason, at: now)
            lanes[stream]?.settle()
            if lanes[stream]?.waiting != nil { waiting.insert(stream) }
            forgetIfDone(stream)
        }
        return sends
    }

    /// `pending` is written: the starts it announces may go.
    mutating func recorded(_ pending: Pending) {
        for record in pending.records where record.outcome == .sending && announcing.remove(record.stream) != nil {
            announced.insert(record.stream)
        }
    }

    /// APNs' answer to `send` (or its absence), `latency` after it left.
    @discardableResult
    mutating func finish(
        _ send: Send,
        response: APNsResponse,
        latency: Duration,
        at now: Timestamp,
        backoff: (Int) -> Duration
    ) -> DeliveryRecord {
        inFlight -= 1
        let verdict = APNsVerdict(response)
        let status = response.status
        var reason = response.reason
        let outcome: DeliveryRecord.Outcome
        var retryAt: Timestamp? = nil
        switch verdict {
        case .delivered:
            outcome = .delivered
        case .retry where send.request.startsActivity && status == nil:
            // APNs may have received it: a second start could start a second activity.
            outcome = .failed
            reason = (reason ?? "no answer") + "; a start is not sent again once APNs may have received it"
        case .retry:
            let time = now + backoff(send.attempt)
            if send.attempt < maximumAttempts && time < send.request.expiration {
                outcome = .retrying
                retryAt = time
            } else {
                outcome = .failed
            }
        case .invalidateToken(let since):
            outcome = .tokenInvalidated
            let since = since ?? now
            if let deviceToken = send.request.deviceToken {
                invalidTokens[send.stream, default: [:]][deviceToken] = since
                pending.invalidations.append(
                    invalidation(
                        of: send,
                        deviceToken: deviceToken,
                        status: status ?? 0,
                        reason: reason ?? "",
                        since: since
                    )
                )
            }
        case .suspendApp:
            outcome = .appSuspended
            suspend(send.stream.app, status: status ?? 0, reason: reason ?? "")
        case .fail:
            outcome = .failed
        }
        let finished = DeliveryRecord(
            attempt: send,
            outcome,
            status: status,
            reason: reason,
            latency: latency,
            at: now
        )
        pending.records.append(finished)
        if outcome.isFinal, let reload = send.reload { pending.reloads.append(reload) }
        if outcome == .delivered, send.request.startsActivity, let token = send.request.deviceToken {
            pending.acceptedStarts.append(
                AcceptedStart(stream: send.stream, position: send.position, token: token, acceptedAt: now)
            )
        }
        let onTheWire = lanes[send.stream]?.onTheWire
        if let retryAt {
            nextRetry = min(nextRetry ?? retryAt, retryAt)
            if let superseded = lanes[send.stream]?.retry(at: retryAt) {
                record(superseded, of: send.stream, .superseded, at: now)
            }
        } else {
            lanes[send.stream]?.settle()
            if let push = onTheWire, push.position == send.position {
                settleHold(of: push, of: send.stream, outcome: outcome)
            }
        }
        if lanes[send.stream]?.waiting != nil { waiting.insert(send.stream) }
        forgetIfDone(send.stream)
        return finished
    }
}
