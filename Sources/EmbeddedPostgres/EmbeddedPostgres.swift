public import Foundation
public import Logging

/// A private PostgreSQL cluster run from the OS's server binaries (`initdb`, `pg_ctl`):
/// the embedded default of `liveline dev`, and the database of the test suites.
///
/// The cluster listens on a Unix socket in a directory of its own (no TCP port, nothing shared
/// with other clusters). PostgreSQL refuses to run as root; when the process is root, the
/// cluster runs as the unprivileged `postgres` user through `runuser`.
public final class EmbeddedPostgres: Sendable {
    public struct Configuration: Sendable {
        /// Where the cluster's files live; created by `initdb` when it holds no cluster yet.
        public var dataDirectory: URL
        /// Where the server puts its Unix socket. Keep the path short (the OS limits socket paths).
        public var socketDirectory: URL
        /// The superuser that `initdb` creates; connections use it, with trust authentication
        /// on the private socket.
        public var superuser: String = "liveline"
        /// Server settings passed as `-c name=value`, e.g. `fsync=off` for throwaway test clusters.
        /// Commit times are recorded by default: `liveline verify` replays the caps in commit order.
        public var settings: [String: String] = ["track_commit_timestamp": "on"]

        public init(dataDirectory: URL, socketDirectory: URL) {
            self.dataDirectory = dataDirectory
            self.socketDirectory = socketDirectory
        }
    }

    public let configuration: Configuration
    private let binaries: PostgresBinaries
    private let logger: Logger

    private init(configuration: Configuration, binaries: PostgresBinaries, logger: Logger) {
        self.configuration = configuration
        self.binaries = binaries
        self.logger = logger
    }

    /// Creates the cluster if needed and starts it, waiting until it accepts connections.
    /// Blocks the calling thread for the second or two this takes.
    ///
    /// A server already running on the data directory (left over from an interrupted run) is
    /// reused.
    public static func start(_ configuration: Configuration, logger: Logger) throws -> EmbeddedPostgres {
        let binaries = try PostgresBinaries.locate()
        let cluster = EmbeddedPostgres(configuration: configuration, binaries: binaries, logger: logger)
        try cluster.prepareDirectories()
        if !FileManager.default.fileExists(atPath: configuration.dataDirectory.appending(path: "PG_VERSION").path) {
            try cluster.initializeCluster()
        }
        if try cluster.isRunning() {
            logger.info("reusing running PostgreSQL", metadata: ["data": "\(configuration.dataDirectory.path)"])
        } else {
            try cluster.startServer()
        }
        return cluster
    }

    /// Whether the account the server runs as (`postgres` when this process is root) can reach
    /// `folder`. A project under a private home directory (`/root`, mode 700) cannot be.
    public static func serverCanReach(_ folder: URL) throws -> Bool {
        try PostgresBinaries.locate().serverCanReach(folder)
    }

    /// Stops the server (fast shutdown: open sessions are ended, data is kept).
    public func stop() throws {
        try binaries.run(.pgCtl, ["stop", "-D", configuration.dataDirectory.path, "-m", "fast", "-w"])
        logger.info("stopped PostgreSQL", metadata: ["data": "\(configuration.dataDirectory.path)"])
    }

    /// Stops whatever server runs on `dataDirectory` (immediate shutdown), if one does: for
    /// clusters left behind by a process that died without stopping them.
    public static func stopServer(dataDirectory: URL) throws {
        try PostgresBinaries.locate().run(
            .pgCtl,
            ["stop", "-D", dataDirectory.path, "-m", "immediate", "-w"],
            acceptingExitCodes: [0, 1, 3, 4]
        )
    }

    /// Starts the server again after `stop()`, on the same data; does nothing if it is running.
    public func restart() throws {
        if try !isRunning() {
            try startServer()
        }
    }

    /// The schema of the database at `connectionString` (this cluster's or any other), as
    /// `pg_dump --schema-only --no-owner` prints it.
    public static func dumpSchema(connectionString: String) throws -> String {
        try dump(connectionString: connectionString, options: ["--schema-only", "--no-owner"])
    }

    /// What `pg_dump` prints of the database at `connectionString` with `options`: the `pg_dump`
    /// beside the server programs, or the one on `PATH` where there are none.
    public static func dump(connectionString: String, options: [String]) throws -> String {
        let arguments = options + ["--dbname=\(connectionString)"]
        if let binaries = try? PostgresBinaries.locate() { return try binaries.output(.pgDump, arguments).output }
        let (status, output) = try ChildProcess.run(["/usr/bin/env", "pg_dump"] + arguments)
        guard status == 0 else { throw EmbeddedPostgresError("pg_dump failed (exit \(status)): \(output)") }
        return output
    }

    /// A libpq URL for `database` on this cluster, as the superuser, over the private socket.
    public func url(database: String) -> String {
        let host =
            configuration.socketDirectory.path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? ""
        let name = database.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? database
        return "postgresql://\(configuration.superuser)@/\(name)?host=\(host)"
    }

    /// The name of the database `initdb` creates for the superuser.
    public var defaultDatabase: String { "postgres" }

    // MARK: Steps

    private func prepareDirectories() throws {
        let socketPath = configuration.socketDirectory.appending(path: ".s.PGSQL.5432").path
        guard socketPath.utf8.count < 104 else {
            throw EmbeddedPostgresError(
                "socket directory path is too long for a Unix socket: \(configuration.socketDirectory.path)"
            )
        }
        for directory in [configuration.dataDirectory, configuration.socketDirectory] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try binaries.handOver(directory)
        }
        // initdb insists on an owner-only data directory.
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o700],
            ofItemAtPath: configuration.dataDirectory.path
        )
    }

    private func initializeCluster() throws {
        logger.info("creating PostgreSQL cluster", metadata: ["data": "\(configuration.dataDirectory.path)"])
        try binaries.run(
            .initdb,
            [
                "-D", configuration.dataDirectory.path, "-U", configuration.superuser, "--auth=trust",
                "--encoding=UTF8", "--no-locale", "--no-sync",
            ]
        )
    }

    private func isRunning() throws -> Bool {
        // pg_ctl status exits 0 when running, 3 when not, 4 when the directory is no cluster.
        try binaries.run(.pgCtl, ["status", "-D", configuration.dataDirectory.path], acceptingExitCodes: [0, 3]) == 0
    }

    private func startServer() throws {
        var options = ["-k", configuration.socketDirectory.path, "-c", "listen_addresses="]
        for (name, value) in configuration.settings.sorted(by: { $0.key < $1.key }) {
            options += ["-c", "\(name)=\(value)"]
        }
        let log = configuration.dataDirectory.appending(path: "server.log").path
        try binaries.run(
            .pgCtl,
            [
                "start", "-D", configuration.dataDirectory.path, "-l", log, "-w", "-t", "60",
                "-o", options.map(shellQuoted).joined(separator: " "),
            ]
        )
        logger.info("started PostgreSQL", metadata: ["socket": "\(configuration.socketDirectory.path)"])
    }
}

/// A failure to set up or run the embedded cluster, in words a person can act on.
public struct EmbeddedPostgresError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// `pg_ctl -o` hands its options to a shell: quote each one.
private func shellQuoted(_ word: String) -> String {
    "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
