public import Logging
public import Postgres

/// Applies `migrations/` to a database: pending files in order, each in its own transaction,
/// recorded in `liveline_migrations`.
///
/// Safe when several processes run it at once (a session advisory lock makes them take turns);
/// refuses to run when an applied file has been edited since.
public struct Migrator: Sendable {
    /// Which migrations a database has, compared with the files.
    public struct Status: Sendable, Equatable {
        public var applied: [Int]
        public var pending: [Migration]

        /// Whether the database is at the files' latest version.
        public var isCurrent: Bool { pending.isEmpty }
    }

    public let migrations: [Migration]
    private let pool: ConnectionPool

    public init(migrations: [Migration], pool: ConnectionPool) {
        self.migrations = migrations
        self.pool = pool
    }

    /// Applies every pending migration; returns those it applied (none when already current).
    /// - Throws: `MigrationError`, or `EventStoreError` when the database fails (a migration's
    ///   SQL included: nothing of that migration is kept).
    @discardableResult
    public func migrate(logger: Logger) async throws -> [Migration] {
        let migrations = migrations
        return try await EventStoreError.sealing {
            try await pool.withConnection { connection in
                try MigrationQueries.withMigrationLock(connection) {
                    try MigrationQueries.createTable(connection)
                    let pending = try Self.compare(migrations, MigrationQueries.applied(connection)).pending
                    for migration in pending {
                        try connection.transaction { connection in
                            try connection.executeScript(migration.sql)
                            try MigrationQueries.record(migration, connection)
                        }
                        logger.info(
                            "applied migration",
                            metadata: [
                                "migration.version": "\(migration.version)", "migration.name": "\(migration.name)",
                            ]
                        )
                    }
                    return pending
                }
            }
        }
    }

    /// Compares the database with the files, without changing anything.
    /// - Throws: `MigrationError` when an applied file was edited or is unknown.
    public func status() async throws -> Status {
        let migrations = migrations
        let applied = try await EventStoreError.sealing {
            try await pool.withConnection { connection in
                try MigrationQueries.tableExists(connection) ? MigrationQueries.applied(connection) : []
            }
        }
        return try Self.compare(migrations, applied)
    }

    static func compare(_ files: [Migration], _ applied: [AppliedMigration]) throws -> Status {
        let byVersion = Dictionary(uniqueKeysWithValues: files.map { ($0.version, $0) })
        for record in applied {
            guard let file = byVersion[record.version] else {
                throw MigrationError.unknownApplied(version: record.version, name: record.name)
            }
            guard file.checksum == record.checksum else {
                throw MigrationError.edited(
                    version: record.version,
                    name: record.name,
                    applied: record.checksum,
                    file: file.checksum
                )
            }
        }
        let appliedVersions = Set(applied.map(\.version))
        return Status(
            applied: applied.map(\.version).sorted(),
            pending: files.filter { !appliedVersions.contains($0.version) }
        )
    }
}

/// A row of `liveline_migrations`.
struct AppliedMigration: Sendable {
    let version: Int
    let name: String
    let checksum: String
}
