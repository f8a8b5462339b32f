public import CanonicalJSON

/// A remote start that APNs accepted and that its device did not confirm: the new activity's
/// push token, which the device reports once it shows the activity, had not arrived when the
/// start confirmation window ran out. The most common silent failure of push-to-start: APNs says
/// 200 to a token the device no longer starts anything with (a stale token, Live Activities
/// turned off), and nothing shows.
public struct UnconfirmedStart: Hashable, Sendable {
    /// The push-to-start token the start went to.
    public var pushToStartToken: String
    /// When APNs accepted the start (its 200).
    public var acceptedAt: Timestamp
    /// When the window ran out: the acceptance plus the start confirmation window.
    public var tokenDueBy: Timestamp
    /// The starts to this token that went unconfirmed in a row, this one included (a confirmed
    /// start ends a run).
    public var unconfirmedInARow: Int
    /// Whether the run makes the token suspect (`LifecyclePolicy.suspectAfterUnconfirmedStarts`).
    public var tokenSuspect: Bool

    public init(
        pushToStartToken: String,
        acceptedAt: Timestamp,
        tokenDueBy: Timestamp,
        unconfirmedInARow: Int,
        tokenSuspect: Bool
    ) {
        self.pushToStartToken = pushToStartToken
        self.acceptedAt = acceptedAt
        self.tokenDueBy = tokenDueBy
        self.unconfirmedInARow = unconfirmedInARow
        self.tokenSuspect = tokenSuspect
    }
}
