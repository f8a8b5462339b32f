public import Foundation
public import Logging
public import Postgres

/// Brings a database to the repository's schema: the pending numbered migrations in order, each in
/// its own transaction, recorded in `liveline_migrations`; then the stored functions' current
/// definitions (`migrations/functions/`), in one transaction, recorded in `liveline_functions`.
/// The definitions are applied when one of them changed, and all of them after any migration
/// (which may have dropped or replaced a function).
///
/// A database with no migration applied is created from the baseline instead, when there is one:
/// its schema, the definitions and its triggers in one transaction, recorded as the migrations it
/// stands for; the numbered migrations after it follow as above.
///
/// Safe when several processes run it at once (a session advisory lock makes them take turns);
/// refuses to run when an applied migration's file has been edited since.
public struct Migrator: Sendable {
    /// Which migrations and function definitions a database has, compared with the files.
    public struct Status: Sendable, Equatable {
        public var applied: [Int]
        /// The baseline a database with no migration applied is to be made from.
        public var baseline: Baseline? = nil
        public var pending: [Migration]
        /// Definitions the database does not have in their current text.
        public var changedFunctions: [FunctionDefinition]

        /// Whether the database is at the files' latest version.
        public var isCurrent: Bool { baseline == nil && pending.isEmpty && changedFunctions.isEmpty }

        /// The files still to apply, as named in the migrations folder (with a baseline, which
        /// takes every function definition, its two files stand for the definitions).
        public var pendingFiles: [String] {
            guard let baseline else { return pending.map(\.fileName) + changedFunctions.map(\.fileName) }
            return baseline.fileNames + pending.map(\.fileName)
        }
    }

    /// What one run applied.
    public struct Applied: Sendable, Equatable {
        /// The baseline a new database was created from.
        public var baseline: Baseline?
        public var migrations: [Migration]
        public var functions: [FunctionDefinition]

        public init(baseline: Baseline? = nil, migrations: [Migration] = [], functions: [FunctionDefinition] = []) {
            self.baseline = baseline
            self.migrations = migrations
            self.functions = functions
        }

        public var isEmpty: Bool { baseline == nil && migrations.isEmpty && functions.isEmpty }
        public var fileNames: [String] {
            (baseline?.fileNames ?? []) + migrations.map(\.fileName) + functions.map(\.fileName)
        }
    }

    public let migrations: [Migration]
    public let functions: [FunctionDefinition]
    /// What a new database is created from; without one it replays every migration.
    public let baseline: Baseline?
    private let pool: ConnectionPool

    public init(
        migrations: [Migration],
        functions: [FunctionDefinition],
        baseline: Baseline? = nil,
        pool: ConnectionPool
    ) {
        self.migrations = migrations
        self.functions = functions
        self.baseline = baseline
        self.pool = pool
    }

    /// The migrator of a migrations folder: its `NNNN_name.sql` files, its `functions/` and its
    /// `baseline/`.
    /// - Throws: `MigrationError` when a file is misnamed, two migrations share a number, or the
    ///   baseline is malformed or stands for migrations the folder lacks.
    public static func loading(from directory: URL, pool: ConnectionPool) throws -> Migrator {
        let migrations = try Migration.load(from: directory)
        let baseline = try Baseline.load(from: directory.appending(path: "baseline"))
        if let baseline, baseline.version < 1 || !Set(1...baseline.version).isSubset(of: migrations.map(\.version)) {
            throw MigrationError.baselineAheadOfMigrations(version: baseline.version)
        }
        return Migrator(
            migrations: migrations,
            functions: try FunctionDefinition.load(from: directory.appending(path: "functions")),
            baseline: baseline,
            pool: pool
        )
    }

    /// Applies every pending migration, then the function definitions that are due; returns what
    /// it applied (nothing when the database was current).
    /// - Throws: `MigrationError`, or `EventStoreError` when the database fails (a file's SQL
    ///   included: nothing of that migration, or of the definitions, is kept).
    @discardableResult
    public func migrate(logger: Logger) async throws -> Applied {
        let (migrations, functions, baseline) = (migrations, functions, baseline)
        return try await EventStoreError.sealing {
            try await pool.withConnection { connection in
                try MigrationQueries.withMigrationLock(connection) {
                    try MigrationQueries.createTables(connection)
                    var applied = Applied()
                    if let baseline, try MigrationQueries.applied(connection).isEmpty {
                        try Self.create(from: baseline, functions, recordedAs: migrations, connection)
                        applied.baseline = baseline
                        applied.functions = functions
                        logger.info(
                            "created the schema from the baseline",
                            metadata: ["migration.version": "\(baseline.version)"]
                        )
                    }
                    applied.migrations = try Self.compare(migrations, MigrationQueries.applied(connection)).pending
                    for migration in applied.migrations {
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
                    let changed = Self.changed(functions, try MigrationQueries.appliedFunctions(connection))
                    if !changed.isEmpty || !applied.migrations.isEmpty {
                        applied.functions = applied.migrations.isEmpty ? changed : functions
                        try connection.transaction { connection in
                            for function in applied.functions { try connection.executeScript(function.sql) }
                            try MigrationQueries.recordFunctions(applied.functions, current: functions, connection)
                        }
                        logger.info(
                            "applied function definitions",
                            metadata: ["functions": "\(applied.functions.map(\.name).joined(separator: ", "))"]
                        )
                    }
                    return applied
                }
            }
        }
    }

    /// Makes a new database from `baseline` and the function definitions, in one transaction,
    /// recorded as the `migrations` the baseline stands for.
    private static func create(
        from baseline: Baseline,
        _ functions: [FunctionDefinition],
        recordedAs migrations: [Migration],
        _ connection: Connection
    ) throws {
        try connection.transaction { connection in
            try connection.executeScript(baseline.schema)
            // As pg_restore does: a body may name what a later migration makes; after any
            // migration, every definition is applied again, checked.
            try MigrationQueries.skipFunctionBodyChecks(connection)
            for function in functions { try connection.executeScript(function.sql) }
            try connection.executeScript(baseline.triggers)
            for migration in migrations where migration.version <= baseline.version {
                try MigrationQueries.record(migration, connection)
            }
            try MigrationQueries.recordFunctions(functions, current: functions, connection)
        }
    }

    /// Compares the database with the files, without changing anything.
    /// - Throws: `MigrationError` when an applied file was edited or is unknown.
    public func status() async throws -> Status {
        let (migrations, functions, baseline) = (migrations, functions, baseline)
        let (applied, appliedFunctions) = try await EventStoreError.sealing {
            try await pool.withConnection { connection in
                try MigrationQueries.tableExists(connection)
                    ? (MigrationQueries.applied(connection), MigrationQueries.appliedFunctions(connection))
                    : ([], [:])
            }
        }
        var status = try Self.compare(migrations, applied)
        status.changedFunctions = Self.changed(functions, appliedFunctions)
        if applied.isEmpty, let baseline {
            status.baseline = baseline
            status.pending.removeAll { $0.version <= baseline.version }
        }
        return status
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
            pending: files.filter { !appliedVersions.contains($0.version) },
            changedFunctions: []
        )
    }

    /// The definitions whose text differs from what the database recorded (`checksums` by name).
    static func changed(_ functions: [FunctionDefinition], _ checksums: [String: String]) -> [FunctionDefinition] {
        functions.filter { checksums[$0.name] != $0.checksum }
    }
}

/// A row of `liveline_migrations`.
struct AppliedMigration: Sendable {
    let version: Int
    let name: String
    let checksum: String
}
