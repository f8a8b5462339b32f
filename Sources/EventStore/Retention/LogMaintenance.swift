import CanonicalJSON
import LogArchive
public import Logging
public import Metrics
public import ServiceLifecycle

/// Keeps what the log holds within its windows, in two jobs that each run every `interval`:
///
/// - `partitions`: creates the log's partitions ahead of now (appends fail without the partition
///   of their time) and reads the log's footprint (bytes by table, partitions ahead and behind);
/// - `retention`: finishes the erasures a stopped process left (`EventStore.eraseWaitingActivities`),
///   removes the idempotency keys older than `idempotencyWindow` (a retry after it is a new
///   command) and — when a retention is set — archives and drops the partitions whose retention
///   has passed (`EventStore.retirePartitions`), then seals the archives written before archives
///   were sealed (`EventStore.sealOlderArchives`).
///
/// The jobs run side by side, so that the partitions ahead never wait behind a retirement: one
/// that archives a large partition at a quarter of the time may take longer than the partitions
/// ahead last. A failed run is an error in the log, counted, and a degradation of `/readyz`
/// (through `health`) until a run of the same job succeeds; it is tried again an `interval` later.
/// Several servers may run it at once: each key is removed once. Run it as a `Service`.
public struct LogMaintenance: Service {
    public struct Configuration: Sendable {
        /// How long an idempotency key is kept (24 hours by default, as Stripe keeps them).
        public var idempotencyWindow: Duration
        /// How often each job runs.
        public var interval: Duration
        /// How many rows one transaction removes at most.
        public var batchSize: Int
        /// How long partitions are kept and where they are archived; `nil` keeps everything.
        public var retention: RetentionPolicy?
        /// The share of its time the creation of partitions ahead works: it rests the rest
        /// between two tables (`EventStore.createPartitions(workShare:)`).
        public var creationWorkShare: Double

        public init(
            idempotencyWindow: Duration = .seconds(24 * 3600),
            interval: Duration = .seconds(60),
            batchSize: Int = 1_000,
            retention: RetentionPolicy? = nil,
            creationWorkShare: Double = 0.25
        ) {
            self.idempotencyWindow = idempotencyWindow
            self.interval = interval
            self.batchSize = batchSize
            self.retention = retention
            self.creationWorkShare = creationWorkShare
        }
    }

    let store: EventStore
    let configuration: Configuration
    let health: MaintenanceHealth
    let logger: Logger
    let metrics: any MetricsFactory

    /// - Parameter metrics: where `liveline_table_bytes{table}`, `liveline_log_partitions{when}`
    ///   (`ahead`, `behind`), `liveline_log_partitions_created_total`,
    ///   `liveline_idempotency_keys_expired_total`, `liveline_log_partitions_retired_total{table}`,
    ///   `liveline_archived_bytes_total`, `liveline_maintenance_failures_total{job}` and
    ///   `liveline_maintenance_last_success_seconds{job}` (the Unix time of the job's last run that
    ///   succeeded; `job` is `partitions` or `retention`) go.
    public init(
        store: EventStore,
        configuration: Configuration = .init(),
        health: MaintenanceHealth,
        logger: Logger,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.store = store
        self.configuration = configuration
        self.health = health
        self.logger = logger
        self.metrics = metrics
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await repeatEveryInterval(keepPartitions) }
                group.addTask { await repeatEveryInterval(applyRetention) }
            }
        }
    }

    private func repeatEveryInterval(_ job: () async -> Void) async {
        while !Task.isCancelled {
            await job()
            try? await Task.sleep(for: configuration.interval)
        }
    }

    /// One run of the `partitions` job: the partitions ahead are created, and the footprint read.
    func keepPartitions() async {
        await reporting(.partitions) {
            let created = try await store.createPartitions(workShare: configuration.creationWorkShare)
            Counter(label: "liveline_log_partitions_created_total", factory: metrics).increment(by: Int64(created))
            if created > 0 {
                logger.info("log partitions created", metadata: ["partitions": "\(created)"])
            }
            record(try await store.logFootprint())
        }
    }

    /// One run of the `retention` job: erasures left half-way are finished, and everything past
    /// its window is removed.
    func applyRetention() async {
        await reporting(.retention) {
            try await store.eraseWaitingActivities()
            let expired = try await store.expireIdempotencyKeys(
                olderThan: configuration.idempotencyWindow,
                batchSize: configuration.batchSize
            )
            Counter(label: "liveline_idempotency_keys_expired_total", factory: metrics).increment(by: Int64(expired))
            if expired > 0 {
                logger.debug("idempotency keys expired", metadata: ["keys": "\(expired)"])
            }
            if let policy = configuration.retention {
                report(try await store.retirePartitions(policy) ?? [])
                if let folder = policy.archive {
                    for archive in try await store.sealOlderArchives(in: folder, workShare: policy.workShare) ?? [] {
                        logger.info(
                            "archive written before sealing sealed",
                            metadata: ["partition": "\(archive.partition)", "rows": "\(archive.rows)"]
                        )
                    }
                }
            }
        }
    }

    /// Runs `work` as a run of `job`: its success is recorded, or its failure reported.
    private func reporting(_ job: MaintenanceHealth.Job, _ work: () async throws -> Void) async {
        let dimensions = [("job", job.rawValue)]
        do {
            try await work()
            Gauge(label: "liveline_maintenance_last_success_seconds", dimensions: dimensions, factory: metrics)
                .record(Double(Timestamp.now().microsecondsSince1970) / 1e6)
            health.report(job, failure: nil)
        } catch {
            // Cancelled: the process stops (the pool may be shut down already); nothing to say.
            if Task.isCancelled { return }
            Counter(label: "liveline_maintenance_failures_total", dimensions: dimensions, factory: metrics).increment()
            logger.error(
                "log maintenance failed; trying again in \(configuration.interval)",
                metadata: ["job": "\(job.rawValue)", "error": "\(String(reflecting: error))"]
            )
            health.report(job, failure: "\(error)")
        }
    }

    private func report(_ retired: [RetiredPartition]) {
        for partition in retired {
            Counter(
                label: "liveline_log_partitions_retired_total",
                dimensions: [("table", partition.table)],
                factory: metrics
            )
            .increment()
            Counter(label: "liveline_archived_bytes_total", factory: metrics)
                .increment(by: Int64(partition.archive?.file.bytes ?? 0))
            logger.info(
                "log partition retired",
                metadata: [
                    "partition": "\(partition.partition)",
                    "archive": "\(partition.archive.map { "\($0.rows) rows, \($0.file.bytes) bytes" } ?? "none")",
                    "activities_removed": "\(partition.activitiesRemoved)",
                ]
            )
        }
    }

    private func record(_ footprint: LogFootprint) {
        for (table, bytes) in footprint.bytesByTable {
            Gauge(label: "liveline_table_bytes", dimensions: [("table", table)], factory: metrics).record(bytes)
        }
        Gauge(label: "liveline_log_partitions", dimensions: [("when", "ahead")], factory: metrics)
            .record(footprint.partitionsAhead)
        Gauge(label: "liveline_log_partitions", dimensions: [("when", "behind")], factory: metrics)
            .record(footprint.partitionsBehind)
    }
}
