import ArgumentParser

/// Flags shared by the commands. Each overrides its environment variable, which overrides the
/// default; see `LivelineConfiguration` and the README's configuration table.
struct ConfigurationOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: "PostgreSQL URL or conninfo (env DATABASE_URL).")
    var databaseURL: String?

    @Option(help: "Address to listen on (env LIVELINE_HOST, default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on (env LIVELINE_PORT, default 8080).")
    var port: String?

    @Option(
        name: .customLong("log-level"),
        help: "trace, debug, info, notice, warning, error or critical (env LIVELINE_LOG_LEVEL, default info)."
    )
    var logLevel: String?

    @Option(help: "Folder of numbered SQL migrations (env LIVELINE_MIGRATIONS, default ./migrations).")
    var migrations: String?

    @Option(name: .customLong("pool-size"), help: "Maximum database connections (env LIVELINE_POOL_SIZE, default 10).")
    var poolSize: String?

    @Option(
        help:
            "How many of the pool's connections write commands at once (env LIVELINE_WRITERS, default a quarter of the pool)."
    )
    var writers: String?

    /// The flags that were given, under their configuration keys.
    var values: [String: String] {
        [
            "database.url": databaseURL,
            "liveline.host": host,
            "liveline.port": port,
            "liveline.log.level": logLevel,
            "liveline.migrations": migrations,
            "liveline.pool.size": poolSize,
            "liveline.writers": writers,
        ].compactMapValues { $0 }
    }
}
