import ActivityLifecycle
import CanonicalJSON
import EventStore

/// What delivering an app's pushes needs: its topic, its credentials, and whether APNs refused
/// those credentials (then its pushes are held until they change).
struct AppDelivery: Sendable {
    let topic: String
    let credentials: APNsCredentials?
    /// When the credentials were last set: a suspension names the credentials it suspends.
    let credentialsUpdatedAt: Timestamp?
    var suspended: Bool
    /// When this was read from the database.
    var readAt: Timestamp

    /// Whether its pushes go: it has credentials APNs has not refused.
    var resumes: Bool { credentials != nil && !suspended }
}
