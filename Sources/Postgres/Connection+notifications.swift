internal import CLibPQ
import Foundation

/// A message sent with `NOTIFY channel, 'payload'` (or `pg_notify`).
public struct PostgresNotification: Hashable, Sendable {
    public let channel: String
    public let payload: String
}

extension Connection {
    /// Subscribes this session to `channel`.
    public func listen(_ channel: String) throws {
        try execute("LISTEN \(identifier: channel)")
    }

    /// Waits up to `timeout` for notifications to arrive and returns them (none on timeout).
    /// Blocks the calling thread; use it on a thread of its own.
    ///
    /// - Throws: `PostgresError.connectionFailure` when the session is gone.
    public func waitForNotifications(timeout: Duration) throws -> [PostgresNotification] {
        var notifications = drainNotifications()
        guard notifications.isEmpty else { return notifications }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        )
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0 && errno != EINTR {
            throw PostgresError(
                code: .connectionFailure,
                message: "waiting for notifications: \(String(cString: strerror(errno)))"
            )
        }
        if ready > 0 {
            guard PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else {
                throw PostgresError(code: .connectionFailure, message: lastErrorMessage)
            }
            notifications = drainNotifications()
        }
        return notifications
    }

    private func drainNotifications() -> [PostgresNotification] {
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            notifications.append(
                PostgresNotification(
                    channel: String(cString: notify.pointee.relname),
                    payload: String(cString: notify.pointee.extra)
                )
            )
            PQfreemem(notify)
        }
        return notifications
    }
}
