import Postgres

/// The SQL of sealing archives written before sealing existed (`EventStore.sealOlderArchives`):
/// the archives the database recorded unsealed, and each new manifest recorded (the keys are
/// `ArchiveKeyQueries`').
enum OlderArchiveQueries {
    /// The partitions whose recorded archive was written before sealing (`liveline-archive/1`)
    /// in a table with personal values, each with its manifest's text.
    static func unsealed(_ connection: Connection) throws -> [(partition: String, manifest: String)] {
        try connection.query(
            """
            SELECT table_name, archive::text AS manifest FROM log_partitions
            WHERE archive ->> 'format' = 'liveline-archive/1' AND (archive ->> 'rows')::bigint > 0
              AND parent IN ('events', 'push_token_invalidations', 'rejections', 'deliveries', 'reload_deliveries')
            ORDER BY to_time, parent
            """
        ).map { (try $0.decode("table_name"), try $0.decode("manifest")) }
    }

    static func record(
        _ manifest: String,
        of partition: String,
        replacing old: String,
        _ connection: Connection
    )
        throws
    {
        try connection.execute(
            """
            UPDATE log_partitions SET archive = \(JSONB(manifest))
            WHERE table_name = \(partition) AND archive = \(JSONB(old))
            """
        )
    }
}
