import NIOConcurrencyHelpers

/// Wakes the delivery loop when there may be work: an answer came back (its lane may have a
/// push waiting behind it) or appends were announced. A signal given while no one waits is
/// kept for the next wait.
final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = NIOLockedValueBox(State())

    func signal() {
        let waiter = state.withLockedValue { state in
            defer { state.waiter = nil }
            state.signalled = state.waiter == nil
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns at the next signal (or at once, for one given since the last wait), after
    /// `timeout`, or when the task is cancelled. One waiter at a time.
    func wait(timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        // Under the lock `onCancel` takes too, so a cancellation is never missed.
                        let resumeNow = self.state.withLockedValue { state in
                            guard !state.signalled, !Task.isCancelled else {
                                state.signalled = false
                                return true
                            }
                            state.waiter = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    self.state.withLockedValue { state in
                        defer { state.waiter = nil }
                        return state.waiter
                    }?.resume()
                }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }
}
