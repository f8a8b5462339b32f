extension EventStore {
    /// Registers `token` as the slot's widget or control token, with the widgets the system
    /// listed for a widget token (empty for a control's): a first one, a rotation, or other
    /// widgets; the same token and widgets again change nothing. For a widget token, an empty list
    /// is a removal: the device has no push-enabled widget left.
    /// - Parameter token: 1–512 visible ASCII characters (the caller checks; the database
    ///   refuses anything else).
    /// - Returns: the slot as it stands after, and whether this call changed it; `nil` for a
    ///   removal of a slot that never had a token.
    public func registerReloadToken(
        _ token: String,
        widgets: [WidgetInfo],
        for slot: ReloadTokenSlot
    ) async throws -> (token: ReloadToken?, changed: Bool) {
        try await withTransaction { connection in
            try ReloadTokenQueries.lock(slot, connection)
            let changed =
                slot.kind == .widgets && widgets.isEmpty
                ? try ReloadTokenQueries.remove(slot, connection)
                : try ReloadTokenQueries.register(
                    token,
                    widgets: WidgetInfo.canonical(widgets),
                    for: slot,
                    connection
                )
            return (try ReloadTokenQueries.token(of: slot, connection), changed)
        }
    }

    /// Removes the slot's widget or control token; `false` when it had none.
    public func removeReloadToken(of slot: ReloadTokenSlot) async throws -> Bool {
        try await withTransaction { connection in
            try ReloadTokenQueries.lock(slot, connection)
            return try ReloadTokenQueries.remove(slot, connection)
        }
    }

    /// The slot's widget or control token and its latest changes (at most 50, oldest first);
    /// `nil` when it never had one.
    public func reloadToken(of slot: ReloadTokenSlot) async throws -> ReloadToken? {
        try await withConnection { try ReloadTokenQueries.token(of: slot, $0) }
    }
}
