// swift-tools-version:6.2
// Benchmarks of Liveline, in a package of their own so that building and testing Liveline does
// not build the benchmark harness. Run them with scripts/benchmark-lifecycle.sh,
// scripts/benchmark-append.sh, scripts/benchmark-deadlines.sh and scripts/benchmark-erasure.sh.
import PackageDescription

/// What the load benchmarks (a private cluster, the event store) depend on.
let loadBenchmarkDependencies: [Target.Dependency] = [
    "BenchmarkSupport",
    .product(name: "ActivityLifecycle", package: "liveline"),
    .product(name: "CanonicalJSON", package: "liveline"),
    .product(name: "EmbeddedPostgres", package: "liveline"),
    .product(name: "EventStore", package: "liveline"),
    .product(name: "Postgres", package: "liveline"),
]

let package = Package(
    name: "liveline-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "liveline", path: ".."),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // What the load benchmarks share: a private cluster, reporting.
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "EmbeddedPostgres", package: "liveline"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Postgres", package: "liveline"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "BenchmarkSupport"
        ),
        // 100,000 deadlines coming due over a minute, applied by the deadline worker:
        // scripts/benchmark-deadlines.sh.
        .executableTarget(
            name: "DeadlineBenchmark",
            dependencies: loadBenchmarkDependencies,
            path: "DeadlineBenchmark"
        ),
        // The event store's append path against pgbench running the same SQL:
        // scripts/benchmark-append.sh.
        .executableTarget(
            name: "AppendBenchmark",
            dependencies: loadBenchmarkDependencies,
            path: "AppendBenchmark"
        ),
        // Erasing a device whose activities lie in sealed archives of 10 million events:
        // scripts/benchmark-erasure.sh.
        .executableTarget(
            name: "ErasureBenchmark",
            dependencies: loadBenchmarkDependencies + [.product(name: "LogArchive", package: "liveline")],
            path: "ErasureBenchmark"
        ),
        .executableTarget(
            name: "LifecycleBenchmarks",
            dependencies: [
                .product(name: "ActivityLifecycle", package: "liveline"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "CanonicalJSON", package: "liveline"),
            ],
            path: "Benchmarks/LifecycleBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        ),
    ]
)
