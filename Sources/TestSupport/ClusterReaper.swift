import EmbeddedPostgres
import Foundation
import Synchronization

/// Stops the shared test cluster when the test process exits, and deletes its folder.
enum ClusterReaper {
    private static let clusters = Mutex<[(EmbeddedPostgres, URL)]>([])

    static func stopAtExit(_ cluster: EmbeddedPostgres, folder: URL) {
        let isFirst = clusters.withLock { clusters in
            clusters.append((cluster, folder))
            return clusters.count == 1
        }
        if isFirst {
            atexit {
                for (cluster, folder) in ClusterReaper.clusters.withLock({ $0 }) {
                    try? cluster.stop()
                    folder.remove()
                }
            }
        }
    }
}
