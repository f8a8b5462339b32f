import EmbeddedPostgres
public import EventStore
public import Foundation
import Postgres

/// Writes the baseline a new database is created from (see `Baseline`) out of a database migrated
/// through the numbered files: `pg_dump`'s schema without the functions (their current text is in
/// `migrations/functions/`) and with the triggers in a file of their own, after the roles the
/// grants name and before the rows the migrations seed. What the migrations took from the day they
/// ran (where the tables split by time end their partitions of older rows; when a row was made) is
/// written as the expression that takes it from the day a new database is created.
public enum BaselineDump {
    /// The committed baseline's folder.
    public static let directory = TestDatabase.migrationsDirectory.appending(path: "baseline")

    /// The baseline of the database at `connectionString`, migrated up to `version`.
    public static func make(of connectionString: String, version: Int) async throws -> Baseline {
        let schema = inCreationOrder(
            DumpEntry.parse(try EmbeddedPostgres.dumpSchema(connectionString: connectionString)),
            indexes: try await indexOrder(of: connectionString)
        )
        let rows = DumpEntry.parse(
            try EmbeddedPostgres.dump(
                connectionString: connectionString,
                options: [
                    "--data-only", "--column-inserts", "--rows-per-insert=1000",
                    "--exclude-table=liveline_migrations", "--exclude-table=liveline_functions",
                ]
            )
        )
        let partitionStart = try partitionStart(in: schema)
        // A timestamp literal as pg_dump prints one.
        let timestamp = /'\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\+00'/
        var migrationDays: Set<String> = []
        var created: [String] = []
        var triggers: [String] = []
        for entry in schema where entry.isBaselineSchema {
            if entry.type == "TRIGGER" {
                triggers.append(entry.text)
            } else if entry.type == "TABLE ATTACH" && entry.name.hasSuffix("_before_partitions") {
                created.append(
                    entry.text.replacing(timestamp) { match in
                        guard String(match.output.0) != logStart else { return String(match.output.0) }
                        migrationDays.insert(String(match.output.0))
                        return partitionStart
                    }
                )
            } else {
                created.append(entry.text)
            }
        }
        let seeded = rows.filter { !$0.text.isEmpty }.map { entry in
            entry.text.replacing(timestamp) { match in
                let literal = String(match.output.0)
                return literal == logStart ? literal : migrationDays.contains(literal) ? partitionStart : "now()"
            }
        }
        let number = String(format: "%04d", version)
        let header = """
            -- The baseline: the schema of migrations 0001 to \(number), for a new database to be made in one
            -- step. Written by scripts/update-baseline.sh from a database migrated through them; not
            -- edited by hand (a change to the schema is a new numbered migration, then the script again).
            """
        return Baseline(
            version: version,
            schema: ([
                """
                \(header)
                -- This file runs first, then the function definitions (migrations/functions/), then
                -- \(number)_triggers.sql, in one transaction.
                """
            ]
                + (try roles(granted: schema)) + created + ["-- The rows the migrations seed."] + seeded)
                .joined(separator: "\n\n") + "\n",
            triggers: (["\(header)\n-- The triggers, which name the functions."] + triggers).joined(separator: "\n\n")
                + "\n"
        )
    }

    /// The log's fixed start of partitions, which is no migration's day.
    private static let logStart = "'2000-01-01 00:00:00+00'"

    /// Where the interval the log is partitioned by began when a new database is made: the
    /// boundary migration 0023 took from the day it ran, by the table's default interval.
    private static func partitionStart(in schema: [DumpEntry]) throws -> String {
        let interval = /partition_interval interval DEFAULT ('[^']+'::interval)/
        guard let table = schema.first(where: { $0.type == "TABLE" && $0.name == "log_partitioning" }),
            let match = table.text.firstMatch(of: interval)
        else {
            throw BaselineDumpError("the dump has no log_partitioning table with a default partition_interval")
        }
        return "date_bin(\(match.output.1), now(), \(logStart))"
    }

    /// The entries that make indexes (keys and indexes), among the places they hold, in the order
    /// the migrations made the indexes rather than pg_dump's: the planner breaks a tie between
    /// indexes by that order, which migration 0018 set for `activities`.
    private static func inCreationOrder(_ entries: [DumpEntry], indexes: [String: Int64]) -> [DumpEntry] {
        func index(_ entry: DumpEntry) -> Int64? {
            switch entry.type {
            case "INDEX": indexes[entry.name]
            case "CONSTRAINT": entry.name.split(separator: " ").last.flatMap { indexes[String($0)] }
            default: nil
            }
        }
        let places = entries.indices.filter { index(entries[$0]) != nil }
        var ordered = entries
        for (place, entry) in zip(places, places.map { entries[$0] }.sorted { index($0)! < index($1)! }) {
            ordered[place] = entry
        }
        return ordered
    }

    /// The object id of each index of the schema, by name: the order they were made in.
    private static func indexOrder(of connectionString: String) async throws -> [String: Int64] {
        try await TestDatabase.withPool(connectionString, maximumConnections: 1) { pool in
            try await pool.withConnection { connection in
                let rows = try connection.query(
                    """
                    SELECT relname::text AS name, oid::bigint AS oid FROM pg_class
                    WHERE relkind IN ('i', 'I') AND relnamespace = 'public'::regnamespace
                    """
                )
                return Dictionary(uniqueKeysWithValues: try rows.map { (try $0.decode("name"), try $0.decode("oid")) })
            }
        }
    }

    /// The roles the grants name, each created unless the cluster has it (another database may be
    /// creating it at once), in the order the numbered migrations create them. Roles are the
    /// cluster's: on a new cluster a database made from the baseline and another migrated through
    /// the numbered files at once each hold the role it made until it commits, so the two must take
    /// them in one order or each waits for the other (CI saw that deadlock).
    private static func roles(granted schema: [DumpEntry]) throws -> [String] {
        let grantee = /(?:TO|FROM) (liveline_[a-z_]+);/
        let names = Set(
            schema.filter { $0.type == "ACL" }.flatMap { $0.text.matches(of: grantee).map { String($0.output.1) } }
        )
        let creationOrder = try Migration.load(from: TestDatabase.migrationsDirectory).flatMap {
            $0.sql.matches(of: /CREATE ROLE (liveline_[a-z_]+)/).map { String($0.output.1) }
        }
        let ordered = creationOrder.filter(names.contains).reduce(into: [String]()) {
            if !$0.contains($1) { $0.append($1) }
        }
        return (ordered + names.subtracting(ordered).sorted()).map { name in
            """
            DO $$ BEGIN
                CREATE ROLE \(name) NOLOGIN;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
            END $$;
            """
        }
    }
}

struct BaselineDumpError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One object of a `pg_dump` script: the statements under a `-- Name: …; Type: …` header.
struct DumpEntry {
    let name: String
    let type: String
    var text: String

    /// Whether the baseline's schema holds it: not a function (its file does, with its grants),
    /// nor the migration runner's own tables, which it makes before anything else.
    var isBaselineSchema: Bool {
        if type == "FUNCTION" || name.hasPrefix("FUNCTION ") { return false }
        let object = name.split(separator: " ").first.map(String.init) ?? name
        return type == "ACL" || !["liveline_migrations", "liveline_functions"].contains(object)
    }

    /// The entries of a `pg_dump` script, in its order, without its session settings and comments.
    static func parse(_ dump: String) -> [DumpEntry] {
        let header = /^-- (?:Data for )?Name: (.*); Type: ([A-Z ]+); Schema:/
        var entries: [DumpEntry] = []
        for line in dump.split(separator: "\n", omittingEmptySubsequences: false) {
            if let match = line.firstMatch(of: header) {
                entries.append(DumpEntry(name: String(match.output.1), type: String(match.output.2), text: ""))
                continue
            }
            let session = ["SET ", "SELECT pg_catalog.set_config(", "\\restrict ", "\\unrestrict ", "--"]
            guard !entries.isEmpty, !session.contains(where: { line.hasPrefix($0) }) else { continue }
            entries[entries.count - 1].text += line + "\n"
        }
        return entries.map { entry in
            var entry = entry
            entry.text = entry.text.trimmingCharacters(in: .whitespacesAndNewlines)
            return entry
        }
    }
}
