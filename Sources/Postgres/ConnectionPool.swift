public import Logging
import NIOCore
import NIOPosix
public import ServiceLifecycle
import Synchronization

/// A bounded pool of `Connection`s whose blocking libpq calls run on threads of their own.
///
/// - At most `maximumConnections` sessions exist; a caller beyond that waits, up to
///   `checkoutTimeout`, for one to be returned.
/// - Bodies run on the pool's dedicated threads (one per connection), never on Swift's
///   cooperative pool; so do connecting, health checks and closing.
/// - A connection found broken (for example after a PostgreSQL restart) is reset before it is
///   lent again, or dropped when it breaks during use, so the pool heals without a restart.
///
/// - An outage (no connection can be opened) is logged once when it begins and once when it
///   ends (`outage`).
///
/// Run it as a `Service` in the application's `ServiceGroup` so it closes after the services
/// that use it, or call `shutdown()` when done.
public final class ConnectionPool: Service, Sendable {
    public struct Configuration: Sendable {
        /// A URL (`postgres://…`) or a conninfo string.
        public var connectionString: String
        public var maximumConnections: Int
        public var checkoutTimeout: Duration

        public init(connectionString: String, maximumConnections: Int = 10, checkoutTimeout: Duration = .seconds(5)) {
            self.connectionString = connectionString
            self.maximumConnections = maximumConnections
            self.checkoutTimeout = checkoutTimeout
        }
    }

    public let configuration: Configuration
    /// Whether the database can be reached, as the pool last saw it; logs each outage once.
    public let outage: DatabaseOutage
    private let logger: Logger
    private let threads: NIOThreadPool
    private let timers: any EventLoop
    private let state: Mutex<PoolState>

    /// Creates the pool; no connection is opened until one is needed.
    /// - Throws: `PostgresError` `.invalidConnectionString` when the connection string cannot be parsed.
    public init(configuration: Configuration, logger: Logger) throws {
        precondition(configuration.maximumConnections > 0, "a pool needs at least one connection")
        try ConnectionString.validate(configuration.connectionString)
        self.configuration = configuration
        self.logger = logger
        self.outage = DatabaseOutage(logger: logger)
        self.threads = NIOThreadPool(numberOfThreads: configuration.maximumConnections)
        self.threads.start()
        self.timers = MultiThreadedEventLoopGroup.singleton.any()
        self.state = Mutex(PoolState(maximumConnections: configuration.maximumConnections))
    }

    /// Lends a connection to `body`, run on one of the pool's threads, and takes it back after.
    @discardableResult
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let lease = try await checkout()
        return try await withCheckedThrowingContinuation { continuation in
            run(lease) { connection in
                Result { try body(connection.get()) }
            } then: { result in
                continuation.resume(with: result)
            }
        }
    }

    /// Runs `body` on one of the pool's threads with a connection, without waiting for one and
    /// without a task in between: `true` when a connection was free (or could be opened) and
    /// `body` will run, `false` when every connection is lent (`body` does not run). `body` gets
    /// the error when the connection cannot be opened.
    public func lendNow(_ body: @escaping @Sendable (Result<Connection, any Error>) -> Void) -> Bool {
        guard let lease = state.withLock({ $0.checkoutNow() }) else { return false }
        run(lease, body) { _ in }
        return true
    }

    /// Runs `body` with the leased connection on one of the pool's threads, gives the connection
    /// back, then hands `body`'s result to `then` (on that thread).
    private func run<T>(
        _ lease: Lease,
        _ body: @escaping @Sendable (Result<Connection, any Error>) -> T,
        then: @escaping @Sendable (T) -> Void
    ) {
        let connectionString = configuration.connectionString
        // Not `runIfActive`: it may drop work when the awaiting task is cancelled, which would
        // lose the lease. Submitted work always runs; only a shut-down pool refuses it.
        threads.submit { workState in
            guard case .active = workState else {
                self.giveBack(lease.idleConnection)
                then(body(.failure(PostgresError(code: .poolShutDown, message: "connection pool is shut down"))))
                return
            }
            let connection: Connection
            do {
                connection = try lease.prepare(connectionString: connectionString)
            } catch {
                if let error = error as? PostgresError, error.isConnectionFailure {
                    self.outage.unreachable(error.debugDescription)
                }
                self.giveBack(nil)
                then(body(.failure(error)))
                return
            }
            let result = body(.success(connection))
            // The session answered (whatever it answered): the database can be reached.
            if connection.isIdle { self.outage.reached() }
            self.giveBack(connection)
            then(result)
        }
    }

    /// Runs `body` in a transaction on a pooled connection: commits when it returns, rolls back when it throws.
    @discardableResult
    public func withTransaction<T: Sendable>(
        isolation: IsolationLevel = .readCommitted,
        _ body: @escaping @Sendable (Connection) throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            try connection.transaction(isolation: isolation, body)
        }
    }

    /// Runs `body` with the pool, then shuts the pool down, whether `body` returned or threw.
    /// For programs that use a pool for one job and end (commands, tests).
    @discardableResult
    public func using<T>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (ConnectionPool) async throws -> T
    ) async throws -> T {
        let value: T
        do {
            value = try await body(self)
        } catch {
            await shutdown()
            throw error
        }
        await shutdown()
        return value
    }

    /// Runs until graceful shutdown, then closes every connection.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Fails waiting callers, closes idle connections, and stops the threads once lent
    /// connections have come back. Safe to call more than once.
    public func shutdown() async {
        let (waiters, idle) = state.withLock { $0.shutDown() }
        for waiter in waiters {
            waiter.timeout?.cancel()
            waiter.continuation.resume(
                throwing: PostgresError(code: .poolShutDown, message: "connection pool shut down")
            )
        }
        // Closing sends a termination message to the server: do it on the pool's threads too.
        threads.submit { _ in withExtendedLifetime(idle) {} }
        try? await threads.shutdownGracefully()
        logger.debug("postgres pool shut down")
    }

    // MARK: Lending

    private func checkout() async throws -> Lease {
        let id = state.withLock { $0.makeWaiterID() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Lease, any Error>) in
                let decision = state.withLock { state in
                    // Under the lock that `abandon` takes too: a task cancelled before it got here
                    // would otherwise wait for a connection it no longer wants.
                    if Task.isCancelled { return PoolState.CheckoutDecision.fail(CancellationError()) }
                    return state.checkout(waiter: id, continuation: continuation) {
                        self.timers.scheduleTask(in: .init(self.configuration.checkoutTimeout)) {
                            self.abandon(id, with: self.timeoutError())
                        }
                    }
                }
                switch decision {
                case .lend(let lease): continuation.resume(returning: lease)
                case .fail(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            abandon(id, with: CancellationError())
        }
    }

    private func abandon(_ id: Int, with error: any Error) {
        guard let waiter = state.withLock({ $0.removeWaiter(id) }) else { return }
        waiter.timeout?.cancel()
        waiter.continuation.resume(throwing: error)
    }

    /// Takes a connection back (or notes that its slot is free when `nil` or broken), and hands
    /// it, or the right to open a new one, to the longest waiting caller. Runs on a pool thread.
    private func giveBack(_ connection: Connection?) {
        let reusable = connection.flatMap { $0.isIdle ? $0 : nil }
        let handOver = state.withLock { $0.giveBack(reusable) }
        if let (waiter, lease) = handOver {
            waiter.timeout?.cancel()
            waiter.continuation.resume(returning: lease)
        }
        if connection != nil && reusable == nil {
            logger.debug("postgres connection dropped: broken or left inside a transaction")
        }
    }

    private func timeoutError() -> PostgresError {
        PostgresError(
            code: .checkoutTimeout,
            message: "no database connection became free within \(configuration.checkoutTimeout) "
                + "(pool of \(configuration.maximumConnections))"
        )
    }
}

/// What a caller gets from the pool: an idle connection, or the right to open a new one.
enum Lease: Sendable {
    case idle(Connection)
    case open

    var idleConnection: Connection? {
        if case .idle(let connection) = self { connection } else { nil }
    }

    /// Returns a usable connection: checks (and if needed resets) an idle one, or connects. Blocks.
    func prepare(connectionString: String) throws -> Connection {
        switch self {
        case .idle(let connection):
            if !connection.isUsable {
                try connection.reset()
            }
            return connection
        case .open:
            return try Connection.connect(connectionString)
        }
    }
}
