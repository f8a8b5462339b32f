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
        try await withTransaction { connection in
            let changed = try PushToStartQueries.register(token, for: slot, connection)
            // The slot has a change now: this one, or the registration it repeats.
            return (try PushToStartQueries.token(of: slot, connection)!, changed)
        }
    }

    /// Removes the slot's push-to-start token; `false` when it had none.
    public func removePushToStartToken(of slot: PushToStartSlot) async throws -> Bool {
        try await withConnection { try PushToStartQueries.remove(slot, $0) }
    }

    /// The slot's push-to-start token and its latest changes (at most 50, oldest first); `nil`
    /// when it never had one.
    public func pushToStartToken(of slot: PushToStartSlot) async throws -> PushToStartToken? {
        try await withConnection { try PushToStartQueries.token(of: slot, $0) }
    }
}
