extension LocalAPNs {
    /// Everything the local APNs knows, behind one lock.
    struct State {
        var keys: [String: RegisteredKey] = [:]
        var unregistered: [String: Int64] = [:]
        var failures: [PlannedFailure] = []
        var received: [ReceivedPush] = []
        var broadcasts: [ReceivedBroadcast] = []
        /// The channels of each app (bundle id), with their message storage policy (0 or 1).
        var channels: [String: [String: Int]] = [:]
        /// Apps whose broadcasts are refused `FeatureNotEnabled`.
        var broadcastDisabled: Set<String> = []
        var refusals: [String: Int] = [:]
        var stalled = 0
        var connections: [Int: ConnectionRecord] = [:]
        private var connectionCount = 0

        mutating func openConnection() -> Int {
            connectionCount += 1
            connections[connectionCount] = ConnectionRecord()
            return connectionCount
        }

        /// Takes one use of the first planned failure that applies to `deviceToken` (or a
        /// channel, or the bundle id of a channel request).
        mutating func takeFailure(for deviceToken: String) -> Failure? {
            guard
                let index = failures.firstIndex(where: { $0.deviceToken == nil || $0.deviceToken == deviceToken })
            else { return nil }
            failures[index].remaining -= 1
            let failure = failures[index].failure
            if failures[index].remaining <= 0 { failures.remove(at: index) }
            return failure
        }
    }

    struct PlannedFailure {
        let failure: Failure
        var remaining: Int
        let deviceToken: String?
    }

    /// What APNs remembers of a connection: its team (one per connection) and its provider token.
    struct ConnectionRecord {
        var teamID: String?
        var providerToken: String?
        /// When the current provider token was first used on the connection.
        var providerTokenSince: Int64 = 0
        /// The provider token whose signature was checked on this connection, and its claims.
        var verified: (claims: ProviderTokenCheck.Claims, token: String)?
    }
}
