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
