import EventStore
import LogArchive
import Logging
import ServiceLifecycle
import Synchronization

/// What a server writes to its database before it serves (the schema checked or migrated, the
/// configured settings, the log's partitions around now, the demo app of `dev`), as a service
/// of the process's group: it runs beside the pool and the listener it needs, and the workers
/// and the HTTP server wait for it (`AfterStartup`, `StartupGate`). A failure ends the group, and
/// so the process, with its error before anything was served.
struct Startup: Service {
    let gate: StartupGate
    let steps: @Sendable () async throws -> Void

    func run() async throws {
        try await steps()
        gate.open()
        // A service that returns ends its group: this one stays until the process stops.
        try? await gracefulShutdown()
    }
}

/// A service that starts once start-up is done.
struct AfterStartup: Service {
    let gate: StartupGate
    let service: any Service

    func run() async throws {
        try await gate.opened()
        try await service.run()
    }
}

/// Opens once, when start-up is done; whoever waits for it goes on then (or when cancelled, with
/// `CancellationError`).
final class StartupGate: Sendable {
    private struct State {
        var isOpen = false
        var waiting: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    func open() {
        let waiting = state.withLock { state in
            state.isOpen = true
            defer { state.waiting = [:] }
            return state.waiting.values
        }
        for waiter in waiting { waiter.resume() }
    }

    func opened() async throws {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                let resumeNow: Result<Void, any Error>? = state.withLock { state in
                    if state.isOpen { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiting[id] = waiter
                    return nil
                }
                if let resumeNow { waiter.resume(with: resumeNow) }
            }
        } onCancel: {
            state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }
}

/// The steps of start-up that every command starting on a database shares.
extension CommandEnvironment {
    /// What the configuration says the database holds, written by every command that starts on
    /// it (`migrate`, `serve`, `dev`): `LIVELINE_PARTITION_INTERVAL` and `LIVELINE_GLOBAL_MAX_OPEN`
    /// when set; then the log's partitions around now, which appends need (the server's
    /// maintenance keeps them ahead), in the configured interval.
    func prepareDatabase(_ store: EventStore) async throws {
        if let interval = configuration.partitionInterval {
            try await store.setPartitionInterval(interval)
        }
        try await store.createPartitions()
        if let globalMaxOpen = configuration.globalMaxOpen {
            try await store.setGlobalMaxOpen(globalMaxOpen, by: .configuration)
            logger.info("global cap on open activities set", metadata: ["limit": "\(globalMaxOpen)"])
        }
    }

    /// Throws unless every migration of `migrator` is applied, saying which are not.
    func requireMigrated(_ migrator: Migrator) async throws {
        let status = try await migrator.status()
        guard status.isCurrent else {
            let pending = status.pendingFiles.joined(separator: ", ")
            throw ConfigurationError("the database is not migrated (pending: \(pending)): run `liveline migrate`")
        }
    }

    /// Says at start that retention is on, and warns when it drops partitions unarchived.
    func log(_ retention: RetentionPolicy) {
        if retention.archive == nil {
            logger.warning(
                "LIVELINE_RETENTION is set without LIVELINE_ARCHIVE_DIR: retired partitions are dropped unarchived"
            )
        }
        logger.info(
            "retention on",
            metadata: [
                "retention": "\(retention.retention.humanReadable)", "archive": "\(retention.archive?.path ?? "none")",
            ]
        )
    }

    /// The retention the settings ask for; `nil` when none is set.
    var retentionPolicy: RetentionPolicy? {
        configuration.retention.map {
            RetentionPolicy(retention: $0, archive: configuration.archiveDirectory.map(ArchiveFolder.init(path:)))
        }
    }

    /// Checks `retention` before anything is retired: the role may retire partitions, and the
    /// archive folder can be written.
    func check(_ retention: RetentionPolicy, on store: EventStore) async throws {
        do {
            try await store.checkMayRetirePartitions()
        } catch let error as RetentionNotPermitted {
            throw ConfigurationError("LIVELINE_RETENTION is set, but \(error)")
        }
        do {
            try retention.archive?.prepare()
        } catch {
            throw ConfigurationError("LIVELINE_ARCHIVE_DIR: \(error)")
        }
    }
}
