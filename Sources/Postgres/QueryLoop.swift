internal import CLibPQ
import Foundation
import Synchronization

/// One thread that waits on the sockets of many connections at once and runs the tasks that
/// use them: a `TaskExecutor` with an I/O loop.
///
/// A task that prefers this executor (`withTaskExecutorPreference`) runs here; when it waits
/// for the server it suspends, and the loop resumes it here once the server's whole answer has
/// arrived. So a command's statements and the Swift work between them run on one thread, with
/// no hand-off per round trip, and one `poll` serves every connection in flight: the loop only
/// sleeps when no task is ready and no answer has arrived.
///
/// Nothing here blocks: libpq runs in non-blocking mode on the connections this loop drives.
final class QueryLoop: TaskExecutor, @unchecked Sendable {
    /// A connection whose task waits until its statement is sent and its answer has arrived.
    private struct Waiter {
        let connection: Connection
        var isFlushing: Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    /// What other threads hand to the loop.
    private struct Inbox {
        var jobs: [UnownedJob] = []
        var waiters: [Waiter] = []
        var isSleeping = false
        var stopping: CheckedContinuation<Void, Never>?
        var isStopped = false
    }

    private let inbox = Mutex(Inbox())
    /// Written to wake the loop from `poll`; the loop reads it empty.
    private let wakeUp: (read: Int32, write: Int32)
    /// The loop's own state, only ever touched on its thread.
    private var waiters: [Waiter] = []
    private var descriptors: [pollfd] = []

    init(name: String) {
        var ends: [Int32] = [0, 0]
        let created = pipe(&ends)
        precondition(created == 0, "cannot create the query loop's wake-up pipe: \(String(cString: strerror(errno)))")
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        wakeUp = (ends[0], ends[1])
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    deinit {
        close(wakeUp.read)
        close(wakeUp.write)
    }

    // MARK: TaskExecutor

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (isOpen, mustWake) = inbox.withLock { inbox in
            guard !inbox.isStopped else { return (false, false) }
            inbox.jobs.append(job)
            defer { inbox.isSleeping = false }
            return (true, inbox.isSleeping)
        }
        guard isOpen else {
            // A task that still prefers a stopped loop runs on the global executor instead.
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
            return
        }
        if mustWake { wake() }
    }

    // MARK: Waiting for the server

    /// Suspends the calling task until `connection` has sent everything it has to send and the
    /// server's answer has arrived whole (or the connection failed): until `PQgetResult` will
    /// not block. Returns at once when that is already so.
    func awaitAnswer(on connection: Connection) async {
        var isFlushing = false
        if Self.advance(connection, isFlushing: &isFlushing) { return }
        await withCheckedContinuation { continuation in
            let waiter = Waiter(connection: connection, isFlushing: isFlushing, continuation: continuation)
            let mustWake = inbox.withLock { inbox in
                inbox.waiters.append(waiter)
                defer { inbox.isSleeping = false }
                return inbox.isSleeping
            }
            if mustWake { wake() }
        }
    }

    /// Sends what is left to send and reads what has arrived; whether the answer is complete.
    private static func advance(_ connection: Connection, isFlushing: inout Bool) -> Bool {
        let handle = connection.handle
        switch PQflush(handle) {
        case 0: isFlushing = false
        case 1: isFlushing = true
        default: return true  // broken: `PQgetResult` reports it
        }
        guard PQconsumeInput(handle) == 1 else { return true }
        return !isFlushing && PQisBusy(handle) == 0
    }

    // MARK: Stopping

    /// Ends the thread once no task waits for an answer and none is queued. Call it when no
    /// connection of this loop is lent any more. Tasks that still prefer this executor later
    /// run on the global executor.
    func stop() async {
        await withCheckedContinuation { continuation in
            let (isStopped, mustWake) = inbox.withLock { inbox in
                guard !inbox.isStopped else { return (true, false) }
                inbox.stopping = continuation
                defer { inbox.isSleeping = false }
                return (false, inbox.isSleeping)
            }
            if isStopped { continuation.resume() }
            if mustWake { wake() }
        }
    }

    // MARK: The loop

    private func run() {
        while true {
            let (jobs, newWaiters, isStopping) = inbox.withLock { inbox in
                defer {
                    inbox.jobs.removeAll(keepingCapacity: true)
                    inbox.waiters.removeAll(keepingCapacity: true)
                }
                return (inbox.jobs, inbox.waiters, inbox.stopping != nil)
            }
            for job in jobs {
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
            waiters += newWaiters
            if isStopping && jobs.isEmpty && waiters.isEmpty && finishStopping() {
                return
            }
            pollSockets(sleeping: jobs.isEmpty && newWaiters.isEmpty)
        }
    }

    /// Ends the loop unless work arrived since it last looked.
    private func finishStopping() -> Bool {
        let stopped: CheckedContinuation<Void, Never>? = inbox.withLock { inbox in
            guard inbox.jobs.isEmpty, inbox.waiters.isEmpty else { return nil }
            inbox.isStopped = true
            defer { inbox.stopping = nil }
            return inbox.stopping
        }
        stopped?.resume()
        return stopped != nil
    }

    /// Waits for the sockets of the waiting connections and for the wake-up pipe — without
    /// sleeping when the last turn had work, which may have queued more — and resumes the tasks
    /// whose answers have arrived.
    private func pollSockets(sleeping: Bool) {
        let mayBlock =
            sleeping
            && inbox.withLock { inbox in
                inbox.isSleeping = inbox.jobs.isEmpty && inbox.waiters.isEmpty
                return inbox.isSleeping
            }
        descriptors.removeAll(keepingCapacity: true)
        descriptors.append(pollfd(fd: wakeUp.read, events: Int16(POLLIN), revents: 0))
        for waiter in waiters {
            let events = waiter.isFlushing ? POLLIN | POLLOUT : POLLIN
            descriptors.append(pollfd(fd: PQsocket(waiter.connection.handle), events: Int16(events), revents: 0))
        }
        let ready = poll(&descriptors, nfds_t(descriptors.count), mayBlock ? -1 : 0)
        if mayBlock {
            inbox.withLock { $0.isSleeping = false }
        }
        guard ready > 0 else { return }
        if descriptors[0].revents != 0 {
            var drained = [UInt8](repeating: 0, count: 64)
            while read(wakeUp.read, &drained, drained.count) > 0 {}
        }
        var answered: [CheckedContinuation<Void, Never>] = []
        var index = waiters.count
        while index > 0 {
            index -= 1
            guard descriptors[index + 1].revents != 0 else { continue }
            if Self.advance(waiters[index].connection, isFlushing: &waiters[index].isFlushing) {
                answered.append(waiters.remove(at: index).continuation)
            }
        }
        // Each resumed task is queued here, and runs at the start of the next turn.
        for continuation in answered.reversed() {
            continuation.resume()
        }
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeUp.write, &byte, 1)
    }
}
