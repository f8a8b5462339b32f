import NIOCore

/// The bookkeeping of `ConnectionPool`, as a plain value: each input is a method that returns
/// what to do, and performs no I/O. Guarded by the pool's mutex.
struct PoolState: ~Copyable {
    struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Lease, any Error>
        let timeout: Scheduled<Void>?
    }

    enum CheckoutDecision {
        case lend(Lease)
        case wait
        case fail(any Error)
    }

    let maximumConnections: Int
    /// Connections that exist or are being opened, lent ones included.
    private(set) var openCount = 0
    private var idle: [Connection] = []
    private var waiters: [Waiter] = []
    private var nextWaiterID = 0
    private var isShutDown = false

    init(maximumConnections: Int) {
        self.maximumConnections = maximumConnections
    }

    mutating func makeWaiterID() -> Int {
        nextWaiterID += 1
        return nextWaiterID
    }

    mutating func checkout(
        waiter id: Int,
        continuation: CheckedContinuation<Lease, any Error>,
        scheduleTimeout: () -> Scheduled<Void>
    ) -> CheckoutDecision {
        if isShutDown {
            return .fail(PostgresError(code: .poolShutDown, message: "connection pool is shut down"))
        }
        if let lease = checkoutNow() { return .lend(lease) }
        waiters.append(Waiter(id: id, continuation: continuation, timeout: scheduleTimeout()))
        return .wait
    }

    /// An idle connection, or the right to open one; `nil` when every connection is lent, the
    /// pool is at its size (or shut down) — nothing waits then.
    mutating func checkoutNow() -> Lease? {
        guard !isShutDown else { return nil }
        if let connection = idle.popLast() {
            return .idle(connection)
        }
        guard openCount < maximumConnections else { return nil }
        openCount += 1
        return .open
    }

    mutating func removeWaiter(_ id: Int) -> Waiter? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index)
    }

    /// A lent connection comes back: `nil` means its slot is free (it broke or was never opened).
    mutating func giveBack(_ connection: Connection?) -> (Waiter, Lease)? {
        guard let connection, !isShutDown else {
            openCount -= 1
            guard !isShutDown, !waiters.isEmpty else { return nil }
            openCount += 1
            return (waiters.removeFirst(), .open)
        }
        guard !waiters.isEmpty else {
            idle.append(connection)
            return nil
        }
        return (waiters.removeFirst(), .idle(connection))
    }

    /// Marks the pool shut down; returns the callers to fail and the idle connections to close.
    mutating func shutDown() -> ([Waiter], [Connection]) {
        isShutDown = true
        defer {
            waiters.removeAll()
            openCount -= idle.count
            idle.removeAll()
        }
        return (waiters, idle)
    }
}
