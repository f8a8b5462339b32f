import ActivityLifecycle

extension EventStore {
    /// Registers `token` as the slot's push-to-start token: a first one, or a rotation that
    /// replaces the one before (kept in the slot's changes). Registering the current token again
    /// changes nothing.
    /// - Parameter token: 1–512 visible ASCII characters (the caller checks; the database
    ///   refuses anything else).
    /// - Returns: the slot as it stands after, and whether this call changed it.
    public func registerPushToStartToken(
        _ token: String,
        for slot: PushToStartSlot
    ) async throws -> (token: PushToStartToken, changed: Bool) {
        let suspectAfter = suspectAfter
        return try await withTransaction { connection in
            let changed = try PushToStartQueries.register(token, for: slot, connection)
            // The slot has a change now: this one, or the registration it repeats.
            return (try PushToStartQueries.token(of: slot, suspectAfter: suspectAfter, connection)!, changed)
        }
    }

    /// Removes the slot's push-to-start token; `false` when it had none.
    public func removePushToStartToken(of slot: PushToStartSlot) async throws -> Bool {
        try await withConnection { try PushToStartQueries.remove(slot, $0) }
    }

    /// The slot's push-to-start token and its latest changes (at most 50, oldest first), with
    /// the unconfirmed starts to it in a row; `nil` when it never had one.
    public func pushToStartToken(of slot: PushToStartSlot) async throws -> PushToStartToken? {
        let suspectAfter = suspectAfter
        return try await withConnection { try PushToStartQueries.token(of: slot, suspectAfter: suspectAfter, $0) }
    }

    /// Unconfirmed starts in a row that make a push-to-start token suspect.
    private var suspectAfter: Int { lifecycle.policy.suspectAfterUnconfirmedStarts }
}
