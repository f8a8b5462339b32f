import EmbeddedPostgres
import Foundation
import Logging
import NIOPosix
import ServiceLifecycle

extension EmbeddedPostgres {
    /// Starts (creating on first use) the cluster of `liveline dev` under `folder`, off the
    /// cooperative thread pool since it waits on `initdb` and `pg_ctl`.
    static func startDevelopmentCluster(under folder: URL, logger: Logger) async throws -> EmbeddedPostgres {
        var folder = folder.standardizedFileURL.absoluteURL
        if try !EmbeddedPostgres.serverCanReach(folder) {
            // Running as root in a folder the `postgres` account cannot enter (such as /root):
            // keep the cluster in a folder of its own under /var/tmp, one per project folder.
            let fallback = URL(filePath: "/var/tmp/liveline-dev-\(stableHash(folder.path))")
            logger.notice(
                "the postgres account cannot reach the project folder; keeping the dev database elsewhere",
                metadata: ["project": "\(folder.path)", "database": "\(fallback.path)"]
            )
            folder = fallback
        }
        var configuration = EmbeddedPostgres.Configuration(
            dataDirectory: folder.appending(path: "postgres"),
            socketDirectory: folder.appending(path: "run")
        )
        if configuration.socketDirectory.path.utf8.count > 90 {
            // Unix socket paths are limited to about 100 bytes: fall back to a short, per-folder path.
            configuration.socketDirectory = URL(filePath: "/tmp/liveline-\(stableHash(folder.path))")
        }
        let settings = configuration
        return try await NIOThreadPool.singleton.runIfActive {
            try EmbeddedPostgres.start(settings, logger: logger)
        }
    }
}

/// A short name derived from `text` that is the same in every run (unlike `hashValue`): FNV-1a.
private func stableHash(_ text: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 {
        hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    return String(hash % 1_000_000_000_000, radix: 36)
}

/// Stops the embedded cluster when the application shuts down; listed first among the
/// services, it stops last, after the server and the pool. It stops it when the group is
/// cancelled too (a server that cannot listen ends the group so): in a task of its own, which
/// that cancellation does not reach, or the cluster would go on running without its server.
struct EmbeddedPostgresService: Service {
    let cluster: EmbeddedPostgres

    func run() async throws {
        try? await gracefulShutdown()
        try await Task.detached { [cluster] in
            try await NIOThreadPool.singleton.runIfActive { try cluster.stop() }
        }.value
    }
}
