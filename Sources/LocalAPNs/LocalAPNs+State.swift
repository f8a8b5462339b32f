extension LocalAPNs {
    /// Everything the local APNs knows, behind one lock.
    struct State {
        /// Whether `received` and `broadcasts` keep what was accepted, for tests to read. A local
        /// APNs that runs for days (`liveline dev`) hands each to `onAccept` only: kept, the pushes
        /// of a day of load would fill the memory.
        let keepsAccepted: Bool
        var keys: [String: RegisteredKey] = [:]
        var unregistered: [String: Int64] = [:]
        var failures: [PlannedFailure] = []
        var received: [ReceivedPush] = []
        var broadcasts: [ReceivedBroadcast] = []
        /// What the request being answered was accepted as, if it was.
        var accepted: Accepted?
        /// The channels of each app (bundle id), with their message storage policy (0 or 1).
        var channels: [String: [String: Int]] = [:]
        /// Apps whose broadcasts are refused `FeatureNotEnabled`.
        var broadcastDisabled: Set<String> = []
        var refusals: [String: Int] = [:]
        var stalled = 0
        var connections: [Int: ConnectionRecord] = [:]
        private var connectionCount = 0

        init(keepsAccepted: Bool) {
            self.keepsAccepted = keepsAccepted
        }

        mutating func accept(_ push: ReceivedPush) {
            accepted = .push(push)
            if keepsAccepted { received.append(push) }
        }

        mutating func accept(_ broadcast: ReceivedBroadcast) {
            accepted = .broadcast(broadcast)
            if keepsAccepted { broadcasts.append(broadcast) }
        }

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
