public import EmbeddedPostgres
import Foundation
public import Logging
import Postgres

/// A private PostgreSQL cluster with default durability and an empty `bench` database, for one
/// benchmark run; `stop()` removes it.
public struct BenchmarkDatabase: Sendable {
    public let cluster: EmbeddedPostgres
    /// The connection string of the `bench` database.
    public let url: String
    private let folder: URL

    public static func start(logger: Logger) async throws -> BenchmarkDatabase {
        let folder = URL(filePath: "/tmp/liveline-bench-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        var configuration = EmbeddedPostgres.Configuration(
            dataDirectory: folder.appending(path: "data"),
            socketDirectory: folder.appending(path: "run")
        )
        // Over the defaults, as the product runs its cluster (commit timestamps on).
        configuration.settings.merge(["max_connections": "100", "shared_buffers": "256MB"]) { $1 }
        let cluster = try EmbeddedPostgres.start(configuration, logger: logger)
        let admin = try ConnectionPool(
            configuration: .init(connectionString: cluster.url(database: "postgres")),
            logger: logger
        )
        try await admin.using { try await $0.withConnection { try $0.execute("CREATE DATABASE bench") } }
        return BenchmarkDatabase(cluster: cluster, url: cluster.url(database: "bench"), folder: folder)
    }

    public func stop() {
        try? cluster.stop()
        try? FileManager.default.removeItem(at: folder)
    }
}

/// Writes a line at once (print's buffer would hold it back when the output is a file).
public func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

public struct BenchmarkError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
