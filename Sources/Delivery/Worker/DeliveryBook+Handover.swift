import ActivityLifecycle
import CanonicalJSON
import EventStore

extension DeliveryBook {
    /// One push to send now, with what sending it needs.
    struct Send: Sendable {
        let stream: StreamID
        let position: Int64
        let version: Int
        let request: APNsRequest
        let committedAt: Timestamp
        let credentials: APNsCredentials
        /// 1 for the first attempt.
        let attempt: Int
    }

    /// What the worker writes in one transaction.
    struct Pending {
        var records: [DeliveryRecord] = []
        var invalidations: [TokenInvalidation] = []
        var suspensions: [Suspension] = []
        var isEmpty: Bool { records.isEmpty && invalidations.isEmpty && suspensions.isEmpty }
    }
}
